/** HTML of the /token page and its login form (no framework: one small inline script). */
export const escapeHtml = (s: string) =>
  s.replace(
    /[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string,
  );

export const PAGE_STYLE = `body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#222}
textarea,input{width:100%;box-sizing:border-box;font:14px monospace;padding:.5rem}
button{margin-top:.5rem;padding:.5rem 1rem;font-size:1rem}pre{background:#f4f4f4;padding:.75rem;overflow:auto}
.err{color:#a00}.ok{color:#070}`;

export function loginPage(
  _nonce: string,
  failed: boolean,
  action = "/token",
  lang: "en" | "de" = "en",
): string {
  const de = lang === "de";
  return `<!doctype html><html lang="${lang}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>portal-bridge: ${de ? "anmelden" : "sign in"}</title><style>${PAGE_STYLE}</style></head><body>
<h1>portal-bridge</h1>
<p>${de ? "Das gemeinsame Geheimnis der Bridge (MCP_AUTH_TOKEN) eingeben, um fortzufahren." : `Enter the bridge's shared secret (MCP_AUTH_TOKEN) to ${action === "/token" ? "manage the portal token" : "continue"}.`}</p>
${failed ? `<p class="err" role="alert">${de ? "Dieses Geheimnis wurde nicht angenommen." : "That secret was not accepted."}</p>` : ""}
<form method="post" action="${escapeHtml(action)}"><label>${de ? "Gemeinsames Geheimnis" : "Shared secret"}<br><input type="password" name="secret" autocomplete="current-password" required></label>
<button type="submit">${de ? "Weiter" : "Continue"}</button></form></body></html>`;
}

/**
 * The paste page. `secret` is the shared secret the user just typed (null when the page was
 * opened with a header or auth is off); it stays in this page only and is sent as a bearer
 * header with the calls to /api/token.
 */
export function tokenPage(nonce: string, secret: string | null): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>portal-bridge: portal token</title><style>${PAGE_STYLE}</style></head><body>
<h1>Portal token</h1>
<form method="post" action="/setup"><input type="hidden" name="secret" value="${escapeHtml(secret ?? "")}">
<p>First time here, or something not working? <button type="submit">Open the set-up check</button> (<a href="/setup">/setup</a>)</p></form>
<input type="hidden" id="secret" value="${escapeHtml(secret ?? "")}">
<h2>Status</h2><pre id="status">loading…</pre>
<h2>Paste a new token</h2>
<ol><li>Log in to the school portal in your browser.</li>
<li>Open the developer tools → Application/Storage → Cookies, and copy the value of the <code>jwt</code> cookie.</li>
<li>Paste it below (the bare value or <code>jwt=…; Path=/</code> both work) and press Save.</li></ol>
<textarea id="token" rows="6" spellcheck="false" autocomplete="off" aria-label="token"></textarea>
<button id="save" type="button">Save</button>
<p id="result" role="status"></p>
<section id="clients" hidden><h2 id="clients-title">Connected assistants</h2>
<p id="clients-none" hidden></p><ul id="clients-list"></ul></section>
<script nonce="${nonce}">
const secret = document.getElementById("secret").value;
const headers = secret ? { authorization: "Bearer " + secret } : {};
const show = (r) => { document.getElementById("status").textContent = JSON.stringify(r, null, 2); };
async function refresh() {
  const res = await fetch("/api/token", { headers });
  const body = await res.json();
  if (res.ok) show(body); else document.getElementById("status").textContent = body.error ? body.error.message : res.status;
}
document.getElementById("save").addEventListener("click", async () => {
  const out = document.getElementById("result");
  out.className = ""; out.textContent = "checking with the portal…";
  const res = await fetch("/api/token", { method: "PUT", headers: { ...headers, "content-type": "text/plain" }, body: document.getElementById("token").value });
  const body = await res.json();
  if (res.ok) { out.className = "ok"; out.textContent = "Accepted. The keep-alive restarted."; document.getElementById("token").value = ""; show(body); }
  else { out.className = "err"; out.textContent = body.error ? body.error.message : "Failed (" + res.status + ")"; }
});
refresh();
// OAuth clients (MCP_OAUTH=on): listed with their last use, each revocable. Hidden when OAuth is off.
const de = (navigator.language || "").toLowerCase().startsWith("de");
const L = de
  ? { title: "Verbundene Assistenten", none: "Noch kein Assistent verbunden.", registered: "registriert", used: "zuletzt benutzt", never: "nie", revoke: "Widerrufen", confirm: "Zugang für diesen Assistenten widerrufen?", unnamed: "(ohne Namen)" }
  : { title: "Connected assistants", none: "No assistant is connected yet.", registered: "registered", used: "last used", never: "never", revoke: "Revoke", confirm: "Revoke this assistant's access?", unnamed: "(no name)" };
const when = (iso) => (iso ? new Date(iso).toLocaleString(de ? "de-DE" : "en-GB") : L.never);
async function loadClients() {
  const res = await fetch("/api/oauth/clients", { headers });
  if (!res.ok) return;
  const { clients } = await res.json();
  const section = document.getElementById("clients");
  section.hidden = false;
  document.getElementById("clients-title").textContent = L.title;
  const none = document.getElementById("clients-none");
  none.textContent = L.none; none.hidden = clients.length > 0;
  const list = document.getElementById("clients-list");
  list.replaceChildren(...clients.map((c) => {
    const li = document.createElement("li");
    const name = document.createElement("strong");
    name.textContent = c.client_name || L.unnamed;
    const meta = document.createElement("span");
    meta.textContent = " · " + L.registered + " " + when(c.created_at) + " · " + L.used + " " + when(c.last_used_at) + " ";
    const btn = document.createElement("button");
    btn.type = "button"; btn.textContent = L.revoke;
    btn.setAttribute("aria-label", L.revoke + ": " + (c.client_name || L.unnamed));
    btn.addEventListener("click", async () => {
      if (!confirm(L.confirm)) return;
      const r = await fetch("/api/oauth/clients/" + encodeURIComponent(c.client_id), { method: "DELETE", headers });
      if (r.ok) loadClients();
    });
    li.append(name, meta, btn);
    return li;
  }));
}
loadClients();
</script></body></html>`;
}
