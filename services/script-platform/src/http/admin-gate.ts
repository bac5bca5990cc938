import { forbidden, unauthorized } from "@app/kit/errors";
import { presentedCredentials } from "@app/kit/http";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { AdminGate } from "../context.js";
import type { Auth } from "../control/auth.js";
import { hasScope, type Principal, type Scope } from "../control/scopes.js";

export const SESSION_COOKIE = "platform_session";

/** The `platform_session` cookie value, if any. */
export function sessionCookie(req: FastifyRequest): string | null {
  const header = req.headers.cookie;
  if (!header) return null;
  for (const part of header.split(";")) {
    const eq = part.indexOf("=");
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === SESSION_COOKIE) {
      const v = part.slice(eq + 1).trim();
      return v === "" ? null : v;
    }
  }
  return null;
}

const cache = new WeakMap<FastifyRequest, Promise<Principal | null>>();

/**
 * The admin gate. Credentials: a session token or an API key as `Authorization: Bearer`,
 * `X-Api-Key`, `X-Auth-Token`, or the session cookie.
 */
export function createAdminGate(auth: Auth): AdminGate {
  const resolve = (req: FastifyRequest): Promise<Principal | null> => {
    let p = cache.get(req);
    if (!p) {
      const creds = presentedCredentials(req.headers);
      const cookie = sessionCookie(req);
      if (cookie) creds.push(cookie);
      p =
        creds.length === 0
          ? Promise.resolve(null)
          : auth
              .authenticate(creds)
              .then((x) => x ?? Promise.reject(unauthorized("The credential is not valid or has expired.")));
      cache.set(req, p);
    }
    return p;
  };
  const assertScope = (principal: Principal, scope: Scope, appId?: string | null) => {
    if (!hasScope(principal, scope, appId)) throw forbidden(`This needs the ${scope} scope.`);
  };
  return {
    async requireAdmin(req, scope, appId) {
      const p = await resolve(req);
      if (!p) throw unauthorized("An admin session or API key is required.");
      if (scope) assertScope(p, scope, appId);
      return p;
    },
    optionalAdmin: resolve,
    assertScope,
  };
}

/** Paths under the admin API that are open (everything else under it needs a credential). */
const OPEN_ADMIN_PATHS = new Set(["/api/v1/admin/login"]);

/** Every request under /api/v1/admin (known route or not) passes the gate first: 401 without a valid credential. */
export function installAdminGate(app: FastifyInstance, gate: AdminGate): void {
  // Callback style, and a prefix test before any split: this hook runs on every request (user
  // routes too), where an async hook would cost a promise each.
  app.addHook("onRequest", (req, _reply, done) => {
    if (!req.url.startsWith("/api/v1/admin")) return done();
    const path = req.url.split("?")[0] ?? "";
    if (!(path === "/api/v1/admin" || path.startsWith("/api/v1/admin/"))) return done();
    if (OPEN_ADMIN_PATHS.has(path)) return done();
    gate.requireAdmin(req).then(() => done(), done);
  });
}
