import { clientAddress, isHttps } from "@app/kit/http/proxy";
import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { createAuth } from "../../control/auth.js";
import { createLoginThrottle } from "../../control/login-throttle.js";
import { APP_SCOPES, hasScope, INSTANCE_SCOPES, type Principal } from "../../control/scopes.js";
import { SESSION_COOKIE } from "../admin-gate.js";
import { platformAuth, principal } from "../route-auth.js";
import { LoginResult, Me } from "../schemas.js";

const loginBody = z.strictObject({
  username: z.string().min(1).max(200),
  password: z.string().min(1).max(1024),
});

/** What a principal may do, for GET /admin/me and the dashboard. */
export function describePrincipal(p: Principal) {
  return {
    kind: p.kind,
    instance_role: p.instanceRole,
    scopes: [...INSTANCE_SCOPES, ...APP_SCOPES].filter(
      (s) => hasScope(p, s) && (p.scopes.has(s) || p.keyScopes?.has(s)),
    ),
    app_roles: Object.fromEntries(p.appRoles),
    app_id: p.appId,
  };
}

/** POST /admin/login (open), POST /admin/logout, GET /admin/me. */
export const authRoutes: RouteModule = (app, ctx) => {
  const auth = createAuth({
    database: ctx.database,
    clock: ctx.clock,
    sessionTtlHours: ctx.config.PLATFORM_SESSION_TTL_HOURS,
  });
  const throttle = createLoginThrottle({ database: ctx.database, clock: ctx.clock });
  // Secure when the client came over TLS (directly or through a trusted proxy) or the public
  // URL is https.
  const secure = (req: FastifyRequest) => isHttps(req) || ctx.publicBaseUrl(req).startsWith("https://");
  // A browser-session cookie: the server enforces the sliding lifetime.
  const setCookie = (req: FastifyRequest, reply: FastifyReply, value: string, clear = false) =>
    reply.header(
      "set-cookie",
      `${SESSION_COOKIE}=${value}; Path=/; HttpOnly; SameSite=Strict${secure(req) ? "; Secure" : ""}${clear ? "; Max-Age=0" : ""}`,
    );

  const api = typed(app);

  api.post(
    "/api/v1/admin/login",
    { schema: { body: loginBody, response: { 200: LoginResult, ...errors(401, 422, 429) } } },
    async (req, reply) => {
      const body = req.body;
      const client = clientAddress(req);
      await throttle.check(body.username, client);
      const result = await auth.login(body.username, body.password).catch(async (err) => {
        if (err?.code === "invalid_credentials") await throttle.failed(body.username, client);
        throw err;
      });
      await throttle.succeeded(body.username, client);
      setCookie(req, reply, result.token);
      return { token: result.token, expires_at: result.expires_at, admin: result.admin };
    },
  );

  api.post(
    "/api/v1/admin/logout",
    { config: { auth: platformAuth.spec({}) }, schema: { response: { 204: NoBody, ...errors(401) } } },
    async (req, reply) => {
      const { sessionId } = principal(req);
      if (sessionId) await auth.logout(sessionId);
      setCookie(req, reply, "", true);
      return reply.code(204).send();
    },
  );

  api.get(
    "/api/v1/admin/me",
    { config: { auth: platformAuth.spec({}) }, schema: { response: { 200: Me, ...errors(401) } } },
    async (req) => {
      const p = principal(req);
      const admin = await auth.repo.byId(p.adminId);
      return { admin: admin ? auth.repo.toAdmin(admin) : null, ...describePrincipal(p) };
    },
  );
};
