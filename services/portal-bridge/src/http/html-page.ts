import { randomBytes } from "node:crypto";
import type { FastifyInstance, FastifyReply } from "fastify";

/** What the bridge's own HTML pages (/token, /setup) are served with. */
const PAGE_HEADERS = (nonce: string) => ({
  "cache-control": "no-store",
  // `no-referrer` would make Chromium send `Origin: null` on the form post, which the Origin check refuses.
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
});

/** Sends a page whose one inline script carries a fresh CSP nonce. */
export function sendPage(reply: FastifyReply, status: number, html: (nonce: string) => string) {
  const nonce = randomBytes(16).toString("base64");
  return reply.code(status).headers(PAGE_HEADERS(nonce)).type("text/html; charset=utf-8").send(html(nonce));
}

/** The login forms post `secret=…` as a small urlencoded form. */
export function addFormParser(scope: FastifyInstance): void {
  scope.addContentTypeParser(
    "application/x-www-form-urlencoded",
    { parseAs: "string", bodyLimit: 4096 },
    (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
  );
}
