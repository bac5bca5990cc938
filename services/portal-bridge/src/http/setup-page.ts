import type { Lang, SetupCheck } from "../setup/checks.js";
import { escapeHtml } from "./token-page.js";

/** The /setup page: one line per part, its state in words and colour, and what to do. */
const T = {
  en: {
    title: "Set-up check",
    intro: "Each part of the bridge, tried just now. Fix the lines marked red or orange from the top.",
    states: { ok: "works", warning: "needs attention", error: "does not work" },
    names: {
      portal_token: "Portal token",
      timetable: "Timetable (WebUntis)",
      public_url: "Public address for connectors",
      alerts: "Alerts and digest",
    },
    test: "Send a test alert",
    sending: "Sending…",
    sent: "Delivered: the receiver answered HTTP ",
    notSent: "Not delivered: ",
    unreachable: "the receiver could not be reached",
    recheck: "Check again",
    token: "Paste a new portal token",
    other: "Deutsch",
  },
  de: {
    title: "Einrichtungs-Check",
    intro:
      "Jeder Teil der Bridge, eben geprüft. Die rot oder orange markierten Zeilen von oben nach unten beheben.",
    states: { ok: "funktioniert", warning: "braucht Aufmerksamkeit", error: "funktioniert nicht" },
    names: {
      portal_token: "Portal-Token",
      timetable: "Stundenplan (WebUntis)",
      public_url: "Öffentliche Adresse für Connectoren",
      alerts: "Alarme und Digest",
    },
    test: "Test-Alarm senden",
    sending: "Wird gesendet …",
    sent: "Zugestellt: der Empfänger antwortete mit HTTP ",
    notSent: "Nicht zugestellt: ",
    unreachable: "der Empfänger war nicht erreichbar",
    recheck: "Erneut prüfen",
    token: "Neues Portal-Token einfügen",
    other: "English",
  },
} as const;

const STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:1.5rem auto;padding:0 1rem;color:#1d1d1d}
h1{font-size:1.5rem;margin:.5rem 0}nav{display:flex;gap:1rem;flex-wrap:wrap;align-items:center;font-size:.95rem}
ul.checks{list-style:none;padding:0;margin:1rem 0}
ul.checks li{border:1px solid #ddd;border-left:6px solid #999;border-radius:6px;padding:.75rem 1rem;margin:.75rem 0;overflow-wrap:anywhere}
ul.checks li.ok{border-left-color:#1a7f37}ul.checks li.warning{border-left-color:#bf8700}ul.checks li.error{border-left-color:#cf222e}
.state{display:inline-block;font-size:.8rem;font-weight:600;padding:.1rem .5rem;border-radius:1rem;margin-left:.5rem;color:#fff;vertical-align:middle}
.ok .state{background:#1a7f37}.warning .state{background:#8a6100}.error .state{background:#cf222e}
.name{font-weight:600}p.msg{margin:.4rem 0 0}button{padding:.5rem 1rem;font-size:1rem;margin:.25rem 0}
form{display:inline}.res{margin:.5rem 0 0}.res.err{color:#a40e26}.res.okk{color:#1a7f37}`;

export function setupPage(
  nonce: string,
  lang: Lang,
  checks: SetupCheck[],
  secret: string | null,
  canTest: boolean,
): string {
  const t = T[lang];
  const other: Lang = lang === "de" ? "en" : "de";
  const hidden = `<input type="hidden" name="secret" value="${escapeHtml(secret ?? "")}">`;
  const items = checks
    .map(
      (c) =>
        `<li class="${c.state}" id="check-${c.id}"><span class="name">${escapeHtml(t.names[c.id])}</span><span class="state">${escapeHtml(t.states[c.state])}</span>
<p class="msg">${escapeHtml(c.message[lang])}</p>${
          c.id === "alerts" && canTest
            ? `<button type="button" id="test-alert">${t.test}</button><p class="res" id="test-result" role="status"></p>`
            : ""
        }</li>`,
    )
    .join("\n");
  return `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>portal-bridge: ${t.title}</title><style>${STYLE}</style></head><body>
<h1>portal-bridge: ${t.title}</h1>
<nav><form method="post" action="/setup?lang=${lang}">${hidden}<button type="submit">${t.recheck}</button></form>
<form method="post" action="/token">${hidden}<button type="submit">${t.token}</button></form>
<form method="post" action="/setup?lang=${other}">${hidden}<button type="submit" lang="${other}">${t.other}</button></form></nav>
<p>${t.intro}</p>
<ul class="checks">
${items}
</ul>
<input type="hidden" id="secret" value="${escapeHtml(secret ?? "")}">
<script nonce="${nonce}">
const btn = document.getElementById("test-alert");
if (btn) btn.addEventListener("click", async () => {
  const out = document.getElementById("test-result");
  const secret = document.getElementById("secret").value;
  out.className = "res"; out.textContent = ${JSON.stringify(t.sending)};
  const res = await fetch("/api/setup/test-alert", { method: "POST", headers: secret ? { authorization: "Bearer " + secret } : {} });
  const body = await res.json().catch(() => ({}));
  if (res.ok && body.delivered) { out.className = "res okk"; out.textContent = ${JSON.stringify(t.sent)} + body.status + "."; }
  else { out.className = "res err"; out.textContent = ${JSON.stringify(t.notSent)} + (body.status ? "HTTP " + body.status : body.error ? body.error.message : ${JSON.stringify(t.unreachable)}); }
});
</script></body></html>`;
}
