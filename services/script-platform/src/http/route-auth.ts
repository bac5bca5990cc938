import { routeAuth } from "@app/kit/http/typed-routes";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { PlatformContext } from "../context.js";
import { resolveAppRef } from "../control/apps.js";
import { type AppRow, appsRepo } from "../control/apps-repository.js";
import type { Principal, Scope } from "../control/scopes.js";
import { scriptNotFound } from "../control/scripts.js";
import type { ScriptRecord } from "../control/scripts-repository.js";

/**
 * A platform route's `config.auth`: an admin session or API key (401 without one), holding
 * `scope` when given (403). With `appParam`, the app named by that path parameter (id or slug) is
 * looked up first (404 `app_not_found`), the scope is checked on it, and `targetApp(req)` is it.
 */
export interface PlatformAuth {
  scope?: Scope;
  appParam?: string;
  /** A GET/HEAD naming the app by a retired slug answers 308 to the path with its current slug. */
  canonical?: boolean;
  /** The script named by this path parameter (404 `script_not_found`); `scope` is checked on its app. */
  scriptParam?: string;
}

/** The platform's route auth: `config: { auth: platformAuth.spec(spec) }`, `principal(req)`. */
export const platformAuth = routeAuth<PlatformAuth, Principal>();

/** The admin or API key a route with `config.auth` acts for. */
export const principal = platformAuth.principal;

const targets = new WeakMap<FastifyRequest, AppRow>();
const targetScripts = new WeakMap<FastifyRequest, ScriptRecord>();

/** The script a route with `config.auth.scriptParam` acts on. */
export function targetScript(req: FastifyRequest): ScriptRecord {
  const script = targetScripts.get(req);
  if (!script) throw new Error(`${req.routeOptions.url} does not declare config.auth.scriptParam`);
  return script;
}

/** The app a route with `config.auth.appParam` acts on (resolved and scope-checked by the hook). */
export function targetApp(req: FastifyRequest): AppRow {
  const app = targets.get(req);
  if (!app) throw new Error(`${req.routeOptions.url} does not declare config.auth.appParam`);
  return app;
}

/** The request path with the segment of route parameter `param` replaced by `value`. */
function withSegment(req: FastifyRequest, param: string, value: string): string {
  const [path = "", query] = req.url.split("?");
  const at = req.routeOptions.url?.split("/").indexOf(`:${param}`) ?? -1;
  const segments = path.split("/");
  if (at >= 0 && at < segments.length) segments[at] = encodeURIComponent(value);
  return `${segments.join("/")}${query !== undefined ? `?${query}` : ""}`;
}

/** The platform's one auth hook (preValidation: 401/404/403 before any 422, as before). */
export function installPlatformAuth(app: FastifyInstance, ctx: PlatformContext): void {
  const apps = appsRepo(ctx.database);
  platformAuth.install(app, async (req, spec, reply: FastifyReply) => {
    if (spec.scriptParam) {
      const id = (req.params as Record<string, string | undefined>)[spec.scriptParam] ?? "";
      const script = await ctx.scripts.byId(id);
      if (!script) throw scriptNotFound();
      const principal = await ctx.gate.requireAdmin(req, spec.scope, script.app_id);
      targetScripts.set(req, script);
      return principal;
    }
    if (!spec.appParam) return ctx.gate.requireAdmin(req, spec.scope);
    const ref = (req.params as Record<string, string | undefined>)[spec.appParam] ?? "";
    const { app: found, redirectedFrom } = await resolveAppRef(apps, ref);
    if (spec.canonical && redirectedFrom && (req.method === "GET" || req.method === "HEAD")) {
      await reply.redirect(withSegment(req, spec.appParam, found.slug), 308);
      return undefined;
    }
    const principal = await ctx.gate.requireAdmin(req, spec.scope, found.id);
    targets.set(req, found);
    return principal;
  });
}

/** `{app}` path params, and the `config` of routes that manage an app (`app:admin` on it). */
export const AppParams = z.object({ app: z.string().describe("App id or slug") });
export const appAdmin = { auth: platformAuth.spec({ scope: "app:admin", appParam: "app" }) };
