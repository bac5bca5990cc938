import { validationFailed } from "@app/kit/errors";
import { presentedCredentials } from "@app/kit/http";
import { binary, errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { KeepAlive } from "../keepalive/keepalive.js";
import type { TokenManager } from "../token/manager.js";
import type { Guard } from "./guard.js";
import { addFormParser, sendPage } from "./html-page.js";
import { bridgeAuth } from "./route-auth.js";
import { TokenStatusReport } from "./schemas.js";
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

/** The pasted token as `text/plain`, or `{"token": "..."}`. */
const TokenBody = z.union([
  z.string().describe("text/plain: the pasted token"),
  z.strictObject({ token: z.string().min(1).max(16_384) }),
]);

function pastedValue(body: z.infer<typeof TokenBody>): string {
  if (typeof body !== "string") return body.token;
  if (body.trim() === "") throw validationFailed("token", "The body must carry the token.");
  if (body.length > 16_384) throw validationFailed("token", "The token is too long.");
  return body;
}

export function registerTokenRoutes(app: FastifyInstance, deps: TokenRouteDeps): void {
  const { guard, tokens, keepalive } = deps;
  const api = typed(app);
  const denied = errors(401, 403);

  api.get(
    "/api/token",
    { config: { auth: bridgeAuth.spec("api") }, schema: { response: { 200: TokenStatusReport, ...denied } } },
    async () => statusReport(tokens, keepalive),
  );

  api.put(
    "/api/token",
    {
      config: { auth: bridgeAuth.spec("api") },
      bodyLimit: 32 * 1024,
      schema: {
        body: TokenBody,
        response: { 200: TokenStatusReport, ...denied, ...errors(400, 409, 413, 415, 422, 502, 503) },
      },
    },
    async (req) => {
      await tokens.replace(pastedValue(req.body));
      return statusReport(tokens, keepalive);
    },
  );

  // The page is behind MCP_AUTH_TOKEN: sent as a header (curl, or a proxy that adds it), or
  // typed into the small login form, which posts it back here. The page then sends it as a
  // bearer header with its calls to /api/token.
  const page = {
    schema: {
      description: "The paste page (HTML); 401 shows the login form.",
      response: {
        200: binary("text/html", "The token page"),
        401: binary("text/html", "The login form"),
        403: errors(403)[403],
      },
    },
  };
  app.get("/token", page, async (req, reply) => {
    if (guard.apiOpen) return sendPage(reply, 200, (n) => tokenPage(n, null));
    // The page's own calls need the secret too; it is the one this request just presented.
    const secret = presentedCredentials(req.headers).find((c) => guard.matchesAuthToken(c));
    if (secret === undefined) return sendPage(reply, 401, (n) => loginPage(n, false));
    return sendPage(reply, 200, (n) => tokenPage(n, secret));
  });

  app.register(async (scope) => {
    addFormParser(scope);
    scope.post("/token", page, async (req, reply) => {
      if (guard.apiOpen) return sendPage(reply, 200, (n) => tokenPage(n, null));
      const secret = (req.body as Record<string, unknown> | null)?.secret;
      if (typeof secret !== "string" || !guard.matchesAuthToken(secret))
        return sendPage(reply, 401, (n) => loginPage(n, true));
      return sendPage(reply, 200, (n) => tokenPage(n, secret));
    });
  });
}
