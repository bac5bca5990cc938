import { randomBytes } from "node:crypto";
import { validationFailed } from "@app/kit/errors";
import { presentedCredentials } from "@app/kit/http";
import { parseInput } from "@app/kit/validate";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { KeepAlive } from "../keepalive/keepalive.js";
import type { TokenManager } from "../token/manager.js";
import type { Guard } from "./guard.js";
import { loginPage, tokenPage } from "./token-page.js";

export interface TokenRouteDeps {
  guard: Guard;
  tokens: TokenManager;
  keepalive: KeepAlive;
}

/** The status report of GET/PUT /api/token (contract shape; never the token itself). */
export function statusReport(tokens: TokenManager, keepalive: KeepAlive) {
  return { token: tokens.status(), upstream: keepalive.upstreamStatus(), keepalive: keepalive.status() };
}

const jsonBody = z.strictObject({ token: z.string().min(1).max(16_384) });

function pastedValue(body: unknown): string {
  if (typeof body === "string") {
    if (body.trim() === "") throw validationFailed("token", "The body must carry the token.");
    if (body.length > 16_384) throw validationFailed("token", "The token is too long.");
    return body;
  }
  return parseInput(jsonBody, body ?? {}).token;
}

const PAGE_HEADERS = (nonce: string) => ({
  "cache-control": "no-store",
  // `no-referrer` would make Chromium send `Origin: null` on the form post, which the Origin check refuses.
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
});

export function registerTokenRoutes(app: FastifyInstance, deps: TokenRouteDeps): void {
  const { guard, tokens, keepalive } = deps;
  const apiAuth = async (req: FastifyRequest) => guard.authenticate(req, "api");

  app.get("/api/token", { onRequest: apiAuth }, async () => statusReport(tokens, keepalive));

  app.put("/api/token", { onRequest: apiAuth, bodyLimit: 32 * 1024 }, async (req) => {
    await tokens.replace(pastedValue(req.body));
    return statusReport(tokens, keepalive);
  });

  const sendPage = (reply: FastifyReply, status: number, html: (nonce: string) => string) => {
    const nonce = randomBytes(16).toString("base64");
    return reply.code(status).headers(PAGE_HEADERS(nonce)).type("text/html; charset=utf-8").send(html(nonce));
  };

  // The page is behind MCP_AUTH_TOKEN: sent as a header (curl, or a proxy that adds it), or
  // typed into the small login form, which posts it back here. The page then sends it as a
  // bearer header with its calls to /api/token.
  app.get("/token", async (req, reply) => {
    if (guard.apiOpen) return sendPage(reply, 200, (n) => tokenPage(n, null));
    // The page's own calls need the secret too; it is the one this request just presented.
    const secret = presentedCredentials(req.headers).find((c) => guard.matchesAuthToken(c));
    if (secret === undefined) return sendPage(reply, 401, (n) => loginPage(n, false));
    return sendPage(reply, 200, (n) => tokenPage(n, secret));
  });

  app.register(async (scope) => {
    scope.addContentTypeParser(
      "application/x-www-form-urlencoded",
      { parseAs: "string", bodyLimit: 4096 },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );
    scope.post("/token", async (req, reply) => {
      if (guard.apiOpen) return sendPage(reply, 200, (n) => tokenPage(n, null));
      const secret = (req.body as Record<string, unknown> | null)?.secret;
      if (typeof secret !== "string" || !guard.matchesAuthToken(secret))
        return sendPage(reply, 401, (n) => loginPage(n, true));
      return sendPage(reply, 200, (n) => tokenPage(n, secret));
    });
  });
}
