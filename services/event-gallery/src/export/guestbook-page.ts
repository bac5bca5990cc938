import { both, esc, formatWhen, href, PICK_LANG_JS } from "./memories.js";

/**
 * The guestbook page of both keepsakes (issue 27): `guestbook.html` in Gallery.zip and in
 * Memories.zip, one self-contained page (inline CSS, no network) with every visible entry oldest
 * first, voice messages as <audio> of the recording stored beside it. English and German like the
 * Memories viewer (the same language choice: remembered switch, lang.js, the browser's).
 */

export interface GuestbookPageEntry {
  author: string;
  text: string;
  created_at: string;
  /** Relative path of the voice recording inside the archive, or null. */
  voice: string | null;
}

export const GUESTBOOK_PAGE = "guestbook.html";

const CSS = `*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#111;color:#eee}
header{padding:24px 16px 8px;text-align:center;border-bottom:3px solid var(--accent)}header h1{margin:0 0 4px;font-size:1.7rem}header a{color:#9cf}
main{max-width:760px;margin:auto;padding:16px;display:flex;flex-direction:column;gap:12px}
article{background:#1c1c1c;border-radius:10px;padding:12px 14px;border-left:4px solid var(--accent)}
.who{font-weight:600}.when{color:#888;font-size:.8rem;margin-left:6px}.text{margin:6px 0 0;white-space:pre-wrap;overflow-wrap:anywhere}
audio{width:100%;margin-top:8px}.l-de{display:none}html.lang-de .l-de{display:inline}html.lang-de .l-en{display:none}
#switch{position:absolute;top:12px;right:12px;background:#222;color:#eee;border:1px solid #444;border-radius:8px;padding:8px 12px;font:inherit;cursor:pointer}header{position:relative}`;

export function renderGuestbookPage(
  event: { name: string; accent_color: string; time_zone: string },
  entries: readonly GuestbookPageEntry[],
  opts: { back: string | null; langScript: boolean },
): string {
  const accent = /^#[0-9a-f]{6}$/i.test(event.accent_color) ? event.accent_color : "#ff7a59";
  const title = both({ en: "Guestbook", de: "Gästebuch" });
  const count = both({
    en: `${entries.length} ${entries.length === 1 ? "message" : "messages"}`,
    de: `${entries.length} ${entries.length === 1 ? "Eintrag" : "Einträge"}`,
  });
  const back = opts.back
    ? `<p><a href="${href(opts.back)}">${both({ en: "← Photos", de: "← Fotos" })}</a></p>`
    : "";
  const switchJs = `(function(){var b=document.getElementById("switch");function label(){b.textContent=document.documentElement.lang==="de"?"English":"Deutsch"}b.addEventListener("click",function(){var l=document.documentElement.lang==="de"?"en":"de";try{localStorage.setItem("memories.lang",l)}catch(e){}document.documentElement.lang=l;document.documentElement.className="lang-"+l;label()});label()})();`;
  const items = entries
    .map((e) => {
      const when = both({
        en: formatWhen(e.created_at, "en", event.time_zone),
        de: formatWhen(e.created_at, "de", event.time_zone),
      });
      return `<article><span class="who">${esc(e.author)}</span><time class="when" datetime="${esc(e.created_at)}">${when}</time>${
        e.text ? `<p class="text">${esc(e.text)}</p>` : ""
      }${e.voice ? `<audio controls preload="none" src="${href(e.voice)}"></audio>` : ""}</article>`;
    })
    .join("\n");
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>${esc(event.name)}</title>
<style>:root{--accent:${accent}}${CSS}</style>
${opts.langScript ? `<script src="lang.js"></script>\n` : ""}<script>${PICK_LANG_JS}</script>
</head>
<body>
<header><h1>${title}</h1><p>${esc(event.name)} · ${count}</p>${back}<button id="switch" type="button">Deutsch</button></header>
<main>
${items}
</main>
<script>${switchJs}</script>
</body>
</html>
`;
}
