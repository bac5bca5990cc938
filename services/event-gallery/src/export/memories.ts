/**
 * The offline viewer inside Memories.zip (issue 14: English and German, times in the event's time
 * zone, the event's branding): one index.html with inline CSS and JS and relative media
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

/** The event's branding and where times are shown (GALLERY_TIMEZONE). */
export interface MemoriesEvent {
  name: string;
  welcome_text_en: string;
  welcome_text_de: string;
  accent_color: string;
  /** Relative path of the cover photo inside the archive, or null. */
  cover: string | null;
  time_zone: string;
}

type Lang = "en" | "de";
const LANGS: Lang[] = ["en", "de"];
const STRINGS: Record<
  Lang,
  Record<"one" | "many" | "open" | "close" | "prev" | "next" | "switch", string>
> = {
  en: {
    one: "memory",
    many: "memories",
    open: "Open",
    close: "Close",
    prev: "Previous",
    next: "Next",
    switch: "Deutsch",
  },
  de: {
    one: "Erinnerung",
    many: "Erinnerungen",
    open: "Öffnen",
    close: "Schließen",
    prev: "Zurück",
    next: "Weiter",
    switch: "English",
  },
};
const LOCALE: Record<Lang, string> = { en: "en-GB", de: "de-DE" };
const DEFAULT_NAME = "Our Event";
const DEFAULT_NAME_DE = "Unser Event";

/** A timestamp as people read it in `lang`, in the event's time zone (with its abbreviation). */
export function formatWhen(iso: string, lang: Lang, timeZone: string): string {
  return new Intl.DateTimeFormat(LOCALE[lang], {
    timeZone,
    weekday: "short",
    day: "numeric",
    month: "short",
    year: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    timeZoneName: "short",
  }).format(new Date(iso));
}

/** Both languages in the markup; CSS shows the one the script (or the default) picked. */
export const both = (text: Record<Lang, string>, tag = "span") =>
  LANGS.map((l) => `<${tag} lang="${l}" class="l-${l}">${esc(text[l])}</${tag}>`).join("");

export const esc = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] ?? c,
  );

/** Relative paths are built from ids and fixed folder names, but encode them anyway. */
export const href = (p: string) => p.split("/").map(encodeURIComponent).join("/");

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

function figure(item: MemoryItem, ev: MemoriesEvent): string {
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
  const when = both({
    en: formatWhen(item.created_at, "en", ev.time_zone),
    de: formatWhen(item.created_at, "de", ev.time_zone),
  });
  return `<figure data-media="${href(item.media)}" data-type="${item.media_type}">
<button class="media" type="button" aria-label="${esc(STRINGS.en.open)}">${item.media_type === "video" ? `<span class="play">▶</span>` : ""}${still}</button>
<figcaption><span class="who">${esc(item.uploader)}</span><time class="when" datetime="${esc(item.created_at)}">${when}</time>${
    item.caption ? `<p class="caption">${esc(item.caption)}</p>` : ""
  }${tags}${comments}</figcaption>
</figure>`;
}

/** Picks the reader's language: the one switched to last time, else lang.js's, else the browser's. */
export const PICK_LANG_JS = `(function(){var l;try{l=localStorage.getItem("memories.lang")}catch(e){}if(l!=="en"&&l!=="de"){l=window.MEMORIES_LANG}if(l!=="en"&&l!=="de"){l=((navigator.languages||[navigator.language]).join(",").toLowerCase().indexOf("de")===0)?"de":"en"}document.documentElement.lang=l;document.documentElement.className="lang-"+l})();`;

/** `event` may be just a name (the defaults for the rest: English and German, Europe/Berlin). */
export function renderMemoriesHtml(
  event: string | MemoriesEvent,
  items: readonly MemoryItem[],
  /** Entries on the archive's guestbook page (issue 27): the header links to it when there are any. */
  guestbookEntries = 0,
): string {
  const ev: MemoriesEvent =
    typeof event === "string"
      ? {
          name: event,
          welcome_text_en: "",
          welcome_text_de: "",
          accent_color: "#ff7a59",
          cover: null,
          time_zone: "Europe/Berlin",
        }
      : event;
  const accent = /^#[0-9a-f]{6}$/i.test(ev.accent_color) ? ev.accent_color : "#ff7a59";
  const name: Record<Lang, string> = {
    en: ev.name,
    de: ev.name === DEFAULT_NAME ? DEFAULT_NAME_DE : ev.name,
  };
  const count = both({
    en: `${items.length} ${items.length === 1 ? STRINGS.en.one : STRINGS.en.many}`,
    de: `${items.length} ${items.length === 1 ? STRINGS.de.one : STRINGS.de.many}`,
  });
  const welcome =
    ev.welcome_text_en || ev.welcome_text_de
      ? `<p class="welcome">${both({ en: ev.welcome_text_en || ev.welcome_text_de, de: ev.welcome_text_de || ev.welcome_text_en })}</p>`
      : "";
  const cover = ev.cover ? `<img class="cover" src="${href(ev.cover)}" alt="">` : "";
  // The reader's language: the one they switched to last time, else the downloader's (lang.js,
  // patched per download: export/viewer-lang.ts), else the browser's.
  const pickLang = PICK_LANG_JS;
  const i18nCss = `header{position:relative}.l-de{display:none}html.lang-de .l-de{display:inline}html.lang-de .l-en{display:none}p.welcome .l-en,p.welcome .l-de{white-space:pre-line}:root{--accent:${accent}}.who{color:#fff;border-bottom:2px solid var(--accent)}header{border-bottom:3px solid var(--accent)}header .cover{display:block;width:100%;max-width:900px;max-height:320px;object-fit:cover;border-radius:12px;margin:0 auto 16px}header .welcome{margin:8px auto 0;max-width:700px;color:#ddd}header .gb a{color:#9cf}#switch{position:absolute;top:12px;right:12px;background:#222;color:#eee;border:1px solid #444;border-radius:8px;padding:8px 12px;font:inherit;cursor:pointer}`;
  const switchJs = `(function(){var b=document.getElementById("switch");function label(){var de=document.documentElement.lang==="de";b.textContent=de?${JSON.stringify(STRINGS.de.switch)}:${JSON.stringify(STRINGS.en.switch)};var lb=document.getElementById("lb");lb.querySelector(".close").setAttribute("aria-label",de?${JSON.stringify(STRINGS.de.close)}:${JSON.stringify(STRINGS.en.close)});lb.querySelector(".prev").setAttribute("aria-label",de?${JSON.stringify(STRINGS.de.prev)}:${JSON.stringify(STRINGS.en.prev)});lb.querySelector(".next").setAttribute("aria-label",de?${JSON.stringify(STRINGS.de.next)}:${JSON.stringify(STRINGS.en.next)});[].forEach.call(document.querySelectorAll("figure .media"),function(m){m.setAttribute("aria-label",de?${JSON.stringify(STRINGS.de.open)}:${JSON.stringify(STRINGS.en.open)})});document.title=de?${JSON.stringify(name.de)}:${JSON.stringify(name.en)};}b.addEventListener("click",function(){var l=document.documentElement.lang==="de"?"en":"de";try{localStorage.setItem("memories.lang",l)}catch(e){}document.documentElement.lang=l;document.documentElement.className="lang-"+l;label();});label();})();`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(ev.name)}</title>
<style>${CSS}${i18nCss}</style>
<script src="lang.js"></script>
<script>${pickLang}</script>
</head>
<body>
<header>${cover}<h1>${both(name)}</h1>${welcome}<p>${count}</p>${
    guestbookEntries > 0
      ? `<p class="gb"><a href="guestbook.html">${both({ en: `Guestbook (${guestbookEntries})`, de: `Gästebuch (${guestbookEntries})` })}</a></p>`
      : ""
  }<button id="switch" type="button">${esc(STRINGS.en.switch)}</button></header>
<main>
${items.map((i) => figure(i, ev)).join("\n")}
</main>
<div id="lb" role="dialog" aria-modal="true"><div class="stage"></div><div class="info"></div>
<button class="close" type="button" aria-label="Close">×</button><button class="prev" type="button" aria-label="Previous">‹</button><button class="next" type="button" aria-label="Next">›</button></div>
<script>${JS}</script>
<script>${switchJs}</script>
</body>
</html>
`;
}
