import { binary } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import type { KeepAlive } from "../keepalive/keepalive.js";
import type { TokenManager } from "../token/manager.js";
import { escapeHtml, PAGE_STYLE } from "./token-page.js";

/** Nothing on the page runs script or loads anything. */
const HEADERS = {
  "cache-control": "no-store",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "content-security-policy":
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'",
};

/**
 * `GET /`: what an operator opening the bridge in a browser needs: the service, whether an
 * upstream token is present (and until when), the keep-alive state, and the way to /token.
 * Open like /healthz: it shows no token, secret, account or path.
 */
export function registerStatusPage(
  app: FastifyInstance,
  deps: { version: string; tokens: TokenManager; keepalive: KeepAlive },
): void {
  app.get(
    "/",
    {
      schema: {
        summary: "Status page",
        description:
          "Service name, version, whether an upstream token is present, link to /token. Nothing secret.",
        response: { 200: binary("text/html", "The status page") },
      },
    },
    async (req, reply) => {
      const de = /^de\b/i.test(req.headers["accept-language"] ?? "");
      const t = deps.tokens.status();
      const ka = deps.keepalive.status().state;
      const token = t.present
        ? de
          ? `vorhanden, gültig bis ${t.expires_at ?? "unbekannt"}`
          : `present, expires ${t.expires_at ?? "unknown"}`
        : de
          ? "fehlt"
          : "missing";
      const html = `<!doctype html><html lang="${de ? "de" : "en"}"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>portal-bridge</title><style>${PAGE_STYLE}</style></head><body>
<h1>portal-bridge</h1>
<p>${de ? "MCP-Server für ein Schulportal-Konto und einen Stundenplan." : "MCP server for one school-portal account and a timetable."}</p>
<p>Version ${escapeHtml(deps.version)}</p>
<dl><dt>${de ? "Portal-Token" : "Portal token"}</dt><dd class="${t.present ? "ok" : "err"}">${escapeHtml(token)}</dd>
<dt>Keep-alive</dt><dd>${escapeHtml(ka)}</dd></dl>
<p><a href="/token">${de ? "Token einfügen oder ersetzen" : "Paste or replace the token"}</a></p>
</body></html>`;
      return reply.headers(HEADERS).type("text/html; charset=utf-8").send(html);
    },
  );
}
