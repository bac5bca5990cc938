import { randomBytes } from "node:crypto";
import { notFound } from "@app/kit/errors";
import {
  InvalidRequestError,
  OAuthError,
  ServerError,
} from "@modelcontextprotocol/sdk/server/auth/errors.js";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Guard } from "../http/guard.js";
import { consentErrorPage, consentPage, pickLang } from "./consent-page.js";
import {
  AuthorizePageError,
  type AuthorizeParams,
  AuthorizeRedirectError,
  type ClientCredentials,
  type OAuthServer,
} from "./server.js";

/**
 * HTTP face of the authorization server. Thin: parse, call OAuthServer, answer. Errors of the
 * OAuth endpoints use the RFC's shape `{error, error_description}` (what OAuth clients parse), not
 * the common error body; the owner's /api/oauth/clients routes use the common body.
 */
export interface OAuthRouteDeps {
  oauth: OAuthServer;
  guard: Guard;
}

type Form = Record<string, string | undefined>;

declare module "fastify" {
  interface FastifyContextConfig {
    /** Host is checked, Origin is not (see app.ts's onRequest hook). */
    crossOrigin?: boolean;
  }
}

/** Endpoints that browser-based clients call cross-origin: Host is still checked, Origin is not. */
const CROSS_ORIGIN = { crossOrigin: true } as const;

const CORS_HEADERS = {
  "access-control-allow-origin": "*",
  "access-control-allow-methods": "GET, POST, OPTIONS",
  "access-control-allow-headers": "authorization, content-type, mcp-protocol-version",
  "access-control-max-age": "600",
};

const PAGE_HEADERS = (nonce: string) => ({
  "cache-control": "no-store",
  "referrer-policy": "same-origin",
  "x-frame-options": "DENY",
  "content-security-policy": `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'unsafe-inline'; form-action 'self' https: http://localhost:* http://127.0.0.1:* http://[::1]:*; frame-ancestors 'none'; base-uri 'none'`,
});

const statusOf = (err: OAuthError): number => {
  switch (err.errorCode) {
    case "invalid_client":
      return 401;
    case "too_many_requests":
      return 429;
    case "access_denied":
      return 403;
    case "server_error":
      return 500;
    default:
      return 400;
  }
};

function sendOAuthError(reply: FastifyReply, err: unknown, basicTried = false): FastifyReply {
  const e =
    err instanceof OAuthError
      ? err
      : (err as { statusCode?: number })?.statusCode && (err as { statusCode: number }).statusCode < 500
        ? new InvalidRequestError("The request is not valid.") // malformed body, wrong content type, too large
        : new ServerError("Internal server error.");
  const body = e.toResponseObject();
  const status = statusOf(e);
  reply.headers({ ...CORS_HEADERS, "cache-control": "no-store" });
  if (status === 429) reply.header("retry-after", "3600");
  if (status === 401 && basicTried) reply.header("www-authenticate", 'Basic realm="portal-bridge"');
  return reply.code(status).type("application/json").send(body);
}

/** Client credentials from Basic auth or the form (RFC 6749 2.3.1); never both. */
function clientCredentials(req: FastifyRequest, form: Form): ClientCredentials {
  const h = req.headers.authorization;
  if (h && /^basic /i.test(h)) {
    const raw = Buffer.from(h.slice(6).trim(), "base64").toString("utf8");
    const i = raw.indexOf(":");
    if (i < 0 || form.client_secret !== undefined)
      throw new InvalidRequestError("Send the client credentials one way only.");
    const dec = (s: string) => {
      try {
        return decodeURIComponent(s.replace(/\+/g, " "));
      } catch {
        return s;
      }
    };
    const clientId = dec(raw.slice(0, i));
    if (form.client_id !== undefined && form.client_id !== clientId)
      throw new InvalidRequestError("client_id does not match the Authorization header.");
    return { clientId, clientSecret: dec(raw.slice(i + 1)), via: "basic" };
  }
  return {
    clientId: form.client_id,
    clientSecret: form.client_secret,
    via: form.client_secret !== undefined ? "post" : "none",
  };
}

const clientIp = (req: FastifyRequest) => req.ip;

export function registerOAuthRoutes(app: FastifyInstance, deps: OAuthRouteDeps): void {
  const { oauth, guard } = deps;

  const sendPage = (reply: FastifyReply, status: number, html: string) =>
    reply
      .code(status)
      .headers(PAGE_HEADERS(randomBytes(16).toString("base64")))
      .type("text/html; charset=utf-8")
      .send(html);

  app.register(async (scope) => {
    scope.addContentTypeParser(
      "application/x-www-form-urlencoded",
      { parseAs: "string", bodyLimit: 16 * 1024 },
      (_req, body, done) => done(null, Object.fromEntries(new URLSearchParams(String(body)))),
    );
    scope.setErrorHandler((err, req, reply) =>
      sendOAuthError(reply, err, /^basic /i.test(req.headers.authorization ?? "")),
    );

    for (const url of [
      "/.well-known/oauth-protected-resource",
      "/.well-known/oauth-protected-resource/mcp",
      "/.well-known/oauth-authorization-server",
      "/oauth/register",
      "/oauth/token",
      "/oauth/revoke",
    ])
      scope.options(url, { config: CROSS_ORIGIN }, async (_req, reply) =>
        reply.code(204).headers(CORS_HEADERS).send(),
      );

    const prm = async (_req: FastifyRequest, reply: FastifyReply) =>
      reply.headers(CORS_HEADERS).send(oauth.protectedResourceMetadata());
    scope.get("/.well-known/oauth-protected-resource", { config: CROSS_ORIGIN }, prm);
    scope.get("/.well-known/oauth-protected-resource/mcp", { config: CROSS_ORIGIN }, prm);
    scope.get("/.well-known/oauth-authorization-server", { config: CROSS_ORIGIN }, async (_req, reply) =>
      reply.headers(CORS_HEADERS).send(oauth.authorizationServerMetadata()),
    );

    scope.post("/oauth/register", { config: CROSS_ORIGIN, bodyLimit: 16 * 1024 }, async (req, reply) => {
      const client = await oauth.register(req.body, clientIp(req));
      return reply
        .code(201)
        .headers({ ...CORS_HEADERS, "cache-control": "no-store" })
        .send(client);
    });

    const authorizeParams = (
      q: Form,
      lang: "en" | "de",
      reply: FastifyReply,
    ): AuthorizeParams | FastifyReply => {
      try {
        return oauth.checkAuthorize(q);
      } catch (err) {
        if (err instanceof AuthorizePageError)
          return sendPage(reply, err.status, consentErrorPage(lang, err.reason));
        if (err instanceof AuthorizeRedirectError) return reply.redirect(err.redirectTo, 302);
        throw err;
      }
    };
    const fieldsOf = (q: Form) =>
      Object.fromEntries(
        [
          "response_type",
          "client_id",
          "redirect_uri",
          "code_challenge",
          "code_challenge_method",
          "state",
          "scope",
          "resource",
        ].flatMap((k) => (q[k] !== undefined ? [[k, q[k] as string]] : [])),
      );

    scope.get("/oauth/authorize", async (req, reply) => {
      const q = req.query as Form;
      const lang = pickLang(req.headers["accept-language"]);
      const p = authorizeParams(q, lang, reply);
      if (!("client" in p)) return p;
      const locked = oauth.consentAllowed(clientIp(req)) ? null : oauth.consentRetryAfterS(clientIp(req));
      return sendPage(
        reply,
        200,
        consentPage({
          lang,
          clientName: p.client.client_name,
          redirectUri: p.redirectUri,
          fields: fieldsOf(q),
          failed: false,
          lockedForS: locked,
        }),
      );
    });

    scope.post("/oauth/authorize", { bodyLimit: 16 * 1024 }, async (req, reply) => {
      const form = (req.body ?? {}) as Form;
      const lang = pickLang(req.headers["accept-language"]);
      const p = authorizeParams(form, lang, reply);
      if (!("client" in p)) return p;
      const ip = clientIp(req);
      const view = (failed: boolean, lockedForS: number | null) =>
        consentPage({
          lang,
          clientName: p.client.client_name,
          redirectUri: p.redirectUri,
          fields: fieldsOf(form),
          failed,
          lockedForS,
        });
      const approve = form.decision === "approve";
      if (approve && !oauth.consentAllowed(ip)) {
        const s = oauth.consentRetryAfterS(ip);
        reply.header("retry-after", String(s));
        return sendPage(reply, 429, view(false, s));
      }
      const to = await oauth.decide(p, approve, form.owner_secret ?? "", ip);
      if (to === null) return sendPage(reply, 401, view(true, null));
      return reply.redirect(to, 302);
    });

    scope.post("/oauth/token", { config: CROSS_ORIGIN }, async (req, reply) => {
      const form = (req.body ?? {}) as Form;
      const client = oauth.authenticateClient(clientCredentials(req, form));
      const tokens = await oauth.token(client, form);
      return reply.headers({ ...CORS_HEADERS, "cache-control": "no-store", pragma: "no-cache" }).send(tokens);
    });

    scope.post("/oauth/revoke", { config: CROSS_ORIGIN }, async (req, reply) => {
      const form = (req.body ?? {}) as Form;
      const client = oauth.authenticateClient(clientCredentials(req, form));
      await oauth.revoke(client, form.token);
      return reply
        .code(200)
        .headers({ ...CORS_HEADERS, "cache-control": "no-store" })
        .send();
    });
  });

  // The owner's view: MCP_AUTH_TOKEN only (common error body, like the rest of /api).
  const apiAuth = async (req: FastifyRequest) => guard.authenticate(req, "api");
  app.get("/api/oauth/clients", { onRequest: apiAuth }, async () => ({ clients: oauth.listClients() }));
  app.delete("/api/oauth/clients/:clientId", { onRequest: apiAuth }, async (req, reply) => {
    const { clientId } = req.params as { clientId: string };
    if (!(await oauth.deleteClient(clientId))) throw notFound("No such OAuth client.");
    return reply.code(204).send();
  });
}
