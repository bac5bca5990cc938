import type { FastifyReply, FastifyRequest } from "fastify";
import type { RouteModuleWith } from "../../context.js";
import type { Runtime } from "../../execution/runtime.js";
import { acceptRawBodies, isReservedPath, noRoute, serveScript } from "./script-requests.js";

/**
 * User routes: every non-reserved path, any method. The Host header selects the app, the app's
 * route table selects the script (ctx.routeTable), and the route's dispatch mode decides between
 * waiting for the result (sync) and 202 (async). Open: no principal, no capability check.
 */
export const userRoutes: RouteModuleWith<{ invoke: Runtime["invoke"] }> = async (app, ctx, engine) => {
  await app.register(async (scoped) => {
    acceptRawBodies(scoped);
    const handler = async (req: FastifyRequest, reply: FastifyReply) => {
      const path = req.url.split("?")[0] ?? "/";
      if (isReservedPath(path)) throw noRoute();
      const m = ctx.routeTable.match(req.headers.host ?? "", req.method, path);
      if (!m) throw noRoute();
      // The route table carries the script (reloaded on every save); read it only when it does not.
      const script = m.script ?? (await ctx.scripts.byId(m.script_id));
      if (!script || script.app_id !== m.app_id) throw noRoute();
      return serveScript(engine.invoke, req, reply, {
        appId: m.app_id,
        script,
        mode: m.route.dispatch_mode === "async" ? "async" : "sync",
        params: m.params,
        rest: m.rest,
        principal: null,
      });
    };
    scoped.all("/", handler);
    scoped.all("/*", handler);
  });
};
