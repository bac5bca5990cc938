import { escapeHtml, PAGE_STYLE } from "../http/token-page.js";

/**
 * The consent page of /oauth/authorize, in English or German (from Accept-Language). It names the
 * client and where the browser will be sent, and asks for the bridge's shared secret: only the
 * owner can connect an assistant.
 */
export type Lang = "en" | "de";

export function pickLang(acceptLanguage: string | undefined): Lang {
  const first = (acceptLanguage ?? "").split(",")[0]?.trim().toLowerCase() ?? "";
  return first.startsWith("de") ? "de" : "en";
}

const T = {
  en: {
    title: "Connect an assistant",
    intro: "An application asks to read this family's school data through portal-bridge.",
    client: "Application",
    unnamed: "(no name given)",
    redirect: "After your answer the browser goes to",
    grants:
      "If you approve, it can read what the bridge's tools show (tasks, news, timetable) until you revoke it on the /token page. It cannot post, submit or delete anything.",
    secret: "Bridge secret (MCP_AUTH_TOKEN)",
    approve: "Approve",
    deny: "Deny",
    wrong: "That secret was not accepted.",
    locked: "Too many wrong attempts. Try again in {s} seconds.",
    badClient:
      "This application is not registered with this bridge. Start the connection again from the assistant.",
    badRedirect:
      "The return address of this request is not one the application registered. Nothing was approved.",
    errorTitle: "Cannot connect",
  },
  de: {
    title: "Assistenten verbinden",
    intro: "Eine Anwendung möchte über portal-bridge die Schuldaten dieser Familie lesen.",
    client: "Anwendung",
    unnamed: "(ohne Namen)",
    redirect: "Nach Ihrer Antwort öffnet der Browser",
    grants:
      "Wenn Sie zustimmen, kann sie lesen, was die Werkzeuge der Bridge zeigen (Aufgaben, Neuigkeiten, Stundenplan), bis Sie den Zugang auf der Seite /token widerrufen. Sie kann nichts senden, abgeben oder löschen.",
    secret: "Bridge-Geheimnis (MCP_AUTH_TOKEN)",
    approve: "Zustimmen",
    deny: "Ablehnen",
    wrong: "Dieses Geheimnis wurde nicht akzeptiert.",
    locked: "Zu viele falsche Versuche. Bitte in {s} Sekunden erneut versuchen.",
    badClient:
      "Diese Anwendung ist bei dieser Bridge nicht registriert. Bitte die Verbindung im Assistenten neu starten.",
    badRedirect:
      "Die Rücksprungadresse dieser Anfrage wurde von der Anwendung nicht registriert. Es wurde nichts freigegeben.",
    errorTitle: "Verbindung nicht möglich",
  },
} as const;

export interface ConsentView {
  lang: Lang;
  clientName: string | null;
  redirectUri: string;
  /** The authorization request's parameters, posted back unchanged with the answer. */
  fields: Record<string, string>;
  failed: boolean;
  lockedForS: number | null;
}

const head = (lang: Lang, title: string) =>
  `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>portal-bridge: ${escapeHtml(title)}</title><style>${PAGE_STYLE}
.actions{display:flex;gap:.75rem;flex-wrap:wrap}.actions button{flex:1 1 8rem}
dl{margin:1rem 0;padding:.75rem 1rem;background:#f4f4f4;border-radius:.5rem}dt{font-size:.875rem;color:#555}
dd{margin:0 0 .5rem;overflow-wrap:anywhere}dd:last-child{margin-bottom:0}#client-name{font-size:1.25rem;font-weight:600}
label{display:block;margin-top:1rem}
</style></head><body>`;

export function consentPage(v: ConsentView): string {
  const t = T[v.lang];
  const hidden = Object.entries(v.fields)
    .map(([k, val]) => `<input type="hidden" name="${escapeHtml(k)}" value="${escapeHtml(val)}">`)
    .join("");
  const alert = v.lockedForS
    ? `<p class="err" role="alert">${escapeHtml(t.locked.replace("{s}", String(v.lockedForS)))}</p>`
    : v.failed
      ? `<p class="err" role="alert">${escapeHtml(t.wrong)}</p>`
      : "";
  return `${head(v.lang, t.title)}
<main><h1>${escapeHtml(t.title)}</h1>
<p>${escapeHtml(t.intro)}</p>
<dl><dt>${escapeHtml(t.client)}</dt><dd id="client-name">${escapeHtml(v.clientName ?? t.unnamed)}</dd>
<dt>${escapeHtml(t.redirect)}</dt><dd id="redirect-uri"><code>${escapeHtml(v.redirectUri)}</code></dd></dl>
<p>${escapeHtml(t.grants)}</p>
${alert}
<form method="post" action="/oauth/authorize">${hidden}
<label for="owner-secret">${escapeHtml(t.secret)}</label>
<input id="owner-secret" type="password" name="owner_secret" autocomplete="current-password">
<div class="actions"><button type="submit" name="decision" value="approve">${escapeHtml(t.approve)}</button>
<button type="submit" name="decision" value="deny" formnovalidate>${escapeHtml(t.deny)}</button></div>
</form></main></body></html>`;
}

export function consentErrorPage(lang: Lang, reason: "unknown_client" | "bad_redirect_uri"): string {
  const t = T[lang];
  return `${head(lang, t.errorTitle)}<main><h1>${escapeHtml(t.errorTitle)}</h1>
<p class="err" role="alert">${escapeHtml(reason === "unknown_client" ? t.badClient : t.badRedirect)}</p></main></body></html>`;
}
