import { randomBytes } from "node:crypto";
import { AppError, notFound } from "@app/kit/errors";
import { clientAddress } from "@app/kit/http/proxy";
import { binary, errors, NoBody, typed } from "@app/kit/http/typed-routes";
import {
  InvalidRequestError,
  OAuthError,
  ServerError,
} from "@modelcontextprotocol/sdk/server/auth/errors.js";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import { bridgeAuth } from "../http/route-auth.js";
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
}

type Form = Record<string, string | undefined>;

declare module "fastify" {
  interface FastifyContextConfig {
    /** Host is checked, Origin is not (see app.ts's onRequest hook). */
    crossOrigin?: boolean;
  }
}

// ---- schemas: requests are objects of strings; unknown parameters are ignored (RFC 6749 3.1) ----
const OAuthErrorBody = z
  .object({ error: z.string(), error_description: z.string().optional() })
  .describe("OAuth error (RFC 6749 5.2)");
const oauthErrors = <S extends number>(...statuses: S[]) =>
  Object.fromEntries(statuses.map((s) => [s, OAuthErrorBody])) as Record<S, typeof OAuthErrorBody>;
const str = z.string().optional();
const AuthorizeQuery = z.object({
  response_type: str,
  client_id: str,
  redirect_uri: str,
  code_challenge: str,
  code_challenge_method: str,
  state: str,
  scope: str,
  resource: str,
});
const ConsentForm = AuthorizeQuery.extend({ owner_secret: str, decision: str });
const TokenForm = z.object({
  grant_type: str,
  code: str,
  code_verifier: str,
  redirect_uri: str,
  refresh_token: str,
  resource: str,
  scope: str,
  client_id: str,
  client_secret: str,
});
const RevokeForm = z.object({ token: str, token_type_hint: str, client_id: str, client_secret: str });
const ProtectedResourceMetadata = z.object({
  resource: z.string(),
  authorization_servers: z.array(z.string()),
  scopes_supported: z.array(z.string()),
  bearer_methods_supported: z.array(z.string()),
});
const ServerMetadata = z.object({
  issuer: z.string(),
  authorization_endpoint: z.string(),
  token_endpoint: z.string(),
  registration_endpoint: z.string(),
  revocation_endpoint: z.string(),
  code_challenge_methods_supported: z.array(z.string()),
});
const RegisteredClient = z.object({
  client_id: z.string(),
  client_secret: z.string().optional(),
  client_id_issued_at: z.number(),
  redirect_uris: z.array(z.string()),
  token_endpoint_auth_method: z.string(),
});
const Tokens = z.object({
  access_token: z.string(),
  token_type: z.literal("Bearer"),
  expires_in: z.number(),
  refresh_token: z.string(),
  scope: z.string(),
});
const ConnectedClient = z.object({
  client_id: z.string(),
  client_name: z.string().nullable(),
  redirect_uris: z.array(z.string()),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
});
const HtmlPage = binary("text/html", "an HTML page");

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
  const clientFault =
    (err instanceof AppError && err.status < 500) ||
    ((err as { statusCode?: number })?.statusCode ?? 500) < 500;
  const e =
    err instanceof OAuthError
      ? err
      : clientFault
        ? new InvalidRequestError("The request is not valid.") // malformed body, wrong content type, too large
        : new ServerError("Internal server error.");
  const status = statusOf(e);
  reply.headers({ ...CORS_HEADERS, "cache-control": "no-store" });
  if (status === 429) reply.header("retry-after", "3600");
  if (status === 401 && basicTried) reply.header("www-authenticate", 'Basic realm="portal-bridge"');
  return reply.code(status).type("application/json").send(e.toResponseObject());
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

const AUTHORIZE_FIELDS = [
  "response_type",
  "client_id",
  "redirect_uri",
  "code_challenge",
  "code_challenge_method",
  "state",
  "scope",
  "resource",
] as const;

/** The authorization request's own parameters, to post back unchanged with the owner's answer. */
const fieldsOf = (q: Form) =>
  Object.fromEntries(AUTHORIZE_FIELDS.flatMap((k) => (q[k] !== undefined ? [[k, q[k] as string]] : [])));

export function registerOAuthRoutes(app: FastifyInstance, deps: OAuthRouteDeps): void {
  const { oauth } = deps;

  const sendPage = (reply: FastifyReply, status: number, html: string) =>
    reply
      .code(status)
      .headers(PAGE_HEADERS(randomBytes(16).toString("base64")))
      .type("text/html; charset=utf-8")
      .send(html);

  /** The checked request, or the reply already sent (error page, or error redirect to the client). */
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

  app.register(async (plain) => {
    const scope = typed(plain);
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
      scope.options(
        url,
        { config: CROSS_ORIGIN, schema: { description: "CORS preflight", response: { 204: NoBody } } },
        async (_req, reply) => reply.code(204).headers(CORS_HEADERS).send(),
      );

    for (const url of ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"])
      scope.get(
        url,
        { config: CROSS_ORIGIN, schema: { response: { 200: ProtectedResourceMetadata } } },
        async (_req, reply) => reply.headers(CORS_HEADERS).send(oauth.protectedResourceMetadata()),
      );
    scope.get(
      "/.well-known/oauth-authorization-server",
      { config: CROSS_ORIGIN, schema: { response: { 200: ServerMetadata } } },
      async (_req, reply) => reply.headers(CORS_HEADERS).send(oauth.authorizationServerMetadata()),
    );

    scope.post(
      "/oauth/register",
      {
        config: CROSS_ORIGIN,
        bodyLimit: 16 * 1024,
        schema: { body: z.unknown(), response: { 201: RegisteredClient, ...oauthErrors(400, 403, 429) } },
      },
      async (req, reply) => {
        const client = await oauth.register(req.body, clientAddress(req));
        return reply
          .code(201)
          .headers({ ...CORS_HEADERS, "cache-control": "no-store" })
          .send(client);
      },
    );

    scope.get(
      "/oauth/authorize",
      { schema: { querystring: AuthorizeQuery, response: { 200: HtmlPage, 302: NoBody, 400: HtmlPage } } },
      async (req, reply) => {
        const q: Form = req.query;
        const lang = pickLang(req.headers["accept-language"]);
        const p = authorizeParams(q, lang, reply);
        if (!("client" in p)) return p;
        const client = clientAddress(req);
        const locked = oauth.consentAllowed(client) ? null : oauth.consentRetryAfterS(client);
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
      },
    );

    scope.post(
      "/oauth/authorize",
      {
        bodyLimit: 16 * 1024,
        schema: { body: ConsentForm, response: { 302: NoBody, 400: HtmlPage, 401: HtmlPage, 429: HtmlPage } },
      },
      async (req, reply) => {
        const form: Form = req.body;
        const lang = pickLang(req.headers["accept-language"]);
        const p = authorizeParams(form, lang, reply);
        if (!("client" in p)) return p;
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
        if (approve && !oauth.consentAllowed(clientAddress(req))) {
          const s = oauth.consentRetryAfterS(clientAddress(req));
          reply.header("retry-after", String(s));
          return sendPage(reply, 429, view(false, s));
        }
        const to = await oauth.decide(p, approve, form.owner_secret ?? "", clientAddress(req));
        if (to === null) return sendPage(reply, 401, view(true, null));
        return reply.redirect(to, 302);
      },
    );

    scope.post(
      "/oauth/token",
      {
        config: CROSS_ORIGIN,
        schema: { body: TokenForm, response: { 200: Tokens, ...oauthErrors(400, 401) } },
      },
      async (req, reply) => {
        const form: Form = req.body;
        const client = oauth.authenticateClient(clientCredentials(req, form));
        const tokens = await oauth.token(client, form);
        return reply
          .headers({ ...CORS_HEADERS, "cache-control": "no-store", pragma: "no-cache" })
          .send(tokens);
      },
    );

    scope.post(
      "/oauth/revoke",
      {
        config: CROSS_ORIGIN,
        schema: { body: RevokeForm, response: { 200: NoBody, ...oauthErrors(400, 401) } },
      },
      async (req, reply) => {
        const form: Form = req.body;
        const client = oauth.authenticateClient(clientCredentials(req, form));
        await oauth.revoke(client, form.token);
        // RFC 7009 2.2: 200 with an empty body, whatever became of the token.
        return reply
          .code(200)
          .headers({ ...CORS_HEADERS, "cache-control": "no-store" })
          .send(undefined);
      },
    );
  });

  // The owner's view: MCP_AUTH_TOKEN only (common error body, like the rest of /api).
  const api = typed(app);
  api.get(
    "/api/oauth/clients",
    {
      config: { auth: bridgeAuth.spec("api") },
      schema: { response: { 200: z.object({ clients: z.array(ConnectedClient) }), ...errors(401, 403) } },
    },
    async () => ({ clients: oauth.listClients() }),
  );
  api.delete(
    "/api/oauth/clients/:clientId",
    {
      config: { auth: bridgeAuth.spec("api") },
      schema: {
        params: z.object({ clientId: z.string().max(200) }),
        response: { 204: NoBody, ...errors(401, 403, 404) },
      },
    },
    async (req, reply) => {
      if (!(await oauth.deleteClient(req.params.clientId))) throw notFound("No such OAuth client.");
      return reply.code(204).send();
    },
  );
}
