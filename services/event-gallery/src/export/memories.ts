/**
 * The offline viewer inside Memories.zip: one index.html with inline CSS and JS and relative media
 * paths, so it works from the unzipped folder with no network. The page is complete without
 * script (every item, caption, tag and comment is in the markup); the script only adds the
 * lightbox with keyboard (←/→/Esc) and swipe navigation.
 */

export interface MemoryItem {
  id: string;
  uploader: string;
  caption: string;
  hashtags: string[];
  media_type: "image" | "video";
  created_at: string;
  /** Relative path inside the archive of what the lightbox shows (display image or video). */
  media: string;
  /** Relative path of a still for the grid (a thumbnail, or the display image). */
  still: string | null;
  comments: { author: string; text: string; created_at: string }[];
}

const esc = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c,
  );

/** Relative paths are built from ids and fixed folder names, but encode them anyway. */
const href = (p: string) => p.split("/").map(encodeURIComponent).join("/");

const CSS = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#111;color:#eee}
header{padding:24px 16px 8px;text-align:center}
header h1{margin:0 0 4px;font-size:1.8rem}
header p{margin:0;color:#aaa}
main{display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:16px;padding:16px;max-width:1400px;margin:auto}
figure{margin:0;background:#1c1c1c;border-radius:10px;overflow:hidden;display:flex;flex-direction:column}
figure .media{display:block;border:0;padding:0;background:#000;cursor:zoom-in;aspect-ratio:1/1;width:100%}
figure .media img,figure .media video{width:100%;height:100%;object-fit:cover;display:block}
figure .media .play{position:relative}
figcaption{padding:10px 12px 12px}
.who{color:#9cf;font-weight:600}
.when{color:#888;font-size:.8rem;margin-left:6px}
.caption{margin:4px 0;white-space:pre-wrap;overflow-wrap:anywhere}
.tags{color:#fc6;font-size:.9rem}
.comments{list-style:none;margin:8px 0 0;padding:0;font-size:.9rem;color:#ccc}
.comments li{margin:2px 0;overflow-wrap:anywhere}
.comments b{color:#ddd}
#lb{position:fixed;inset:0;background:rgba(0,0,0,.95);display:none;flex-direction:column;align-items:center;justify-content:center;z-index:10;touch-action:pan-y}
#lb.open{display:flex}
#lb .stage{flex:1;display:flex;align-items:center;justify-content:center;width:100%;min-height:0}
#lb img,#lb video{max-width:100vw;max-height:80vh;object-fit:contain}
#lb .info{padding:8px 16px 16px;max-width:900px;width:100%}
#lb button{position:absolute;background:rgba(255,255,255,.15);color:#fff;border:0;border-radius:50%;width:48px;height:48px;font-size:1.6rem;cursor:pointer}
#lb .close{top:12px;right:12px}
#lb .prev{left:12px;top:45%}
#lb .next{right:12px;top:45%}
@media (max-width:600px){main{grid-template-columns:repeat(2,1fr);gap:8px;padding:8px}#lb .prev,#lb .next{display:none}}
`;

const JS = `
(function(){
var items=[].slice.call(document.querySelectorAll("figure[data-media]"));
var lb=document.getElementById("lb"),stage=lb.querySelector(".stage"),info=lb.querySelector(".info");
var cur=-1,startX=null;
function show(i){
  if(i<0||i>=items.length)return;
  cur=i;var f=items[i];stage.innerHTML="";
  var el;
  if(f.getAttribute("data-type")==="video"){el=document.createElement("video");el.controls=true;el.playsInline=true;el.autoplay=true;}
  else{el=document.createElement("img");el.alt=f.querySelector(".caption")?f.querySelector(".caption").textContent:"";}
  el.src=f.getAttribute("data-media");stage.appendChild(el);
  info.innerHTML=f.querySelector("figcaption").innerHTML;
  lb.classList.add("open");
}
function close(){lb.classList.remove("open");stage.innerHTML="";cur=-1;}
items.forEach(function(f,i){f.querySelector(".media").addEventListener("click",function(){show(i);});});
lb.querySelector(".close").addEventListener("click",close);
lb.querySelector(".prev").addEventListener("click",function(){show(cur-1);});
lb.querySelector(".next").addEventListener("click",function(){show(cur+1);});
document.addEventListener("keydown",function(e){
  if(cur<0)return;
  if(e.key==="Escape")close();else if(e.key==="ArrowLeft")show(cur-1);else if(e.key==="ArrowRight")show(cur+1);
});
lb.addEventListener("touchstart",function(e){startX=e.touches[0].clientX;},{passive:true});
lb.addEventListener("touchend",function(e){
  if(startX===null)return;var dx=e.changedTouches[0].clientX-startX;startX=null;
  if(Math.abs(dx)>50)show(dx<0?cur+1:cur-1);
});
})();
`;

function figure(item: MemoryItem): string {
  const still =
    item.media_type === "video"
      ? item.still
        ? `<img src="${href(item.still)}" alt="" loading="lazy">`
        : `<video src="${href(item.media)}" preload="metadata" muted playsinline></video>`
      : `<img src="${href(item.still ?? item.media)}" alt="${esc(item.caption)}" loading="lazy">`;
  const tags = item.hashtags.length
    ? `<div class="tags">${item.hashtags.map((t) => `#${esc(t)}`).join(" ")}</div>`
    : "";
  const comments = item.comments.length
    ? `<ul class="comments">${item.comments
        .map((c) => `<li><b>${esc(c.author)}</b>: ${esc(c.text)}</li>`)
        .join("")}</ul>`
    : "";
  const when = item.created_at.slice(0, 16).replace("T", " ");
  return `<figure data-media="${href(item.media)}" data-type="${item.media_type}">
<button class="media" type="button" aria-label="Open">${item.media_type === "video" ? `<span class="play">▶</span>` : ""}${still}</button>
<figcaption><span class="who">${esc(item.uploader)}</span><span class="when">${esc(when)} UTC</span>${
    item.caption ? `<p class="caption">${esc(item.caption)}</p>` : ""
  }${tags}${comments}</figcaption>
</figure>`;
}

export function renderMemoriesHtml(eventName: string, items: readonly MemoryItem[]): string {
  const count = `${items.length} ${items.length === 1 ? "memory" : "memories"}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(eventName)}</title>
<style>${CSS}</style>
</head>
<body>
<header><h1>${esc(eventName)}</h1><p>${count}</p></header>
<main>
${items.map(figure).join("\n")}
</main>
<div id="lb" role="dialog" aria-modal="true"><div class="stage"></div><div class="info"></div>
<button class="close" type="button" aria-label="Close">×</button><button class="prev" type="button" aria-label="Previous">‹</button><button class="next" type="button" aria-label="Next">›</button></div>
<script>${JS}</script>
</body>
</html>
`;
}
