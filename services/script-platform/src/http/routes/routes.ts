import { AppError } from "@app/kit/errors";
import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { resolveApp } from "../../control/apps.js";
import { appsRepo } from "../../control/apps-repository.js";
import { normalizeHost } from "../../control/route-patterns.js";
import { createRoutes, normalizeRoute, routeNotFound } from "../../control/routes.js";
import { scriptNotFound } from "../../control/scripts.js";
import { scriptsRepo } from "../../control/scripts-repository.js";
import { platformAuth, principal, targetScript } from "../route-auth.js";
import { MatchResult, page, Route, RouteCheck } from "../schemas.js";

const routeFields = {
  host_kind: z.enum(["any", "strict", "wildcard"]).optional(),
  host: z.string().max(300).nullable().optional(),
  path: z.string().min(1).max(2048),
  method: z.string().max(20).optional(),
  dispatch_mode: z.enum(["sync", "async"]).optional(),
};
const routeBody = z.strictObject({
  ...routeFields,
  // Accepted for clients that send the whole route back; must agree with the URL and the path.
  script_id: z.string().optional(),
  path_kind: z.enum(["exact", "prefix", "param"]).optional(),
});
const checkBody = z.strictObject({
  ...routeFields,
  script_id: z.string().optional(),
  app_id: z.string().optional(),
});
const matchBody = z.strictObject({ url: z.string().min(1).max(4096), method: z.string().min(1).max(20) });

/** Routes of a script, route delete, and the pre-flight check / synthetic match tools. */
export const routeRoutes: RouteModule = (app, ctx) => {
  const routes = createRoutes({ database: ctx.database, clock: ctx.clock, routeTable: ctx.routeTable });
  const scripts = scriptsRepo(ctx.database);
  const apps = appsRepo(ctx.database);

  const scriptOf = async (id: string) => {
    const s = await scripts.byId(id);
    if (!s) throw scriptNotFound();
    return s;
  };

  const api = typed(app);
  const scriptParams = z.object({ id: z.string() });

  api.post(
    "/api/v1/admin/scripts/:id/routes",
    {
      config: { auth: platformAuth.spec({ scope: "script:write", scriptParam: "id" }) },
      schema: {
        params: scriptParams,
        body: routeBody,
        response: { 201: Route, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (req, reply) => {
      const s = targetScript(req);
      const { script_id, path_kind, ...body } = req.body;
      if (script_id !== undefined && script_id !== s.id)
        throw new AppError(422, "validation_failed", "script_id does not match the script in the URL.", {
          field: "script_id",
        });
      if (path_kind !== undefined && normalizeRoute(body).path_kind !== path_kind)
        throw new AppError(422, "invalid_route", `The path ${body.path} is not a ${path_kind} route.`, {
          field: "path_kind",
        });
      return reply.code(201).send(await routes.create(s.id, body));
    },
  );

  api.get(
    "/api/v1/admin/scripts/:id/routes",
    {
      config: { auth: platformAuth.spec({ scope: "app:read", scriptParam: "id" }) },
      schema: { params: scriptParams, response: { 200: page(Route), ...errors(401, 403, 404) } },
    },
    async (req) => ({ items: await routes.listForScript(targetScript(req).id), next_cursor: null }),
  );

  api.delete(
    "/api/v1/admin/routes/:route",
    {
      config: { auth: platformAuth.spec({}) },
      schema: {
        params: z.object({ route: z.string() }),
        response: { 204: NoBody, ...errors(401, 403, 404) },
      },
    },
    async (req, reply) => {
      const r = await routes.byId(req.params.route);
      if (!r) throw routeNotFound();
      ctx.gate.assertScope(principal(req), "script:write", r.app_id);
      await routes.remove(r.id);
      return reply.code(204).send();
    },
  );

  api.post(
    "/api/v1/admin/routes::check",
    {
      config: { auth: platformAuth.spec({}) },
      schema: { body: checkBody, response: { 200: RouteCheck, ...errors(401, 403, 404, 422) } },
    },
    async (req) => {
      const { script_id, app_id, ...input } = req.body;
      let appId: string;
      if (script_id) appId = (await scriptOf(script_id)).app_id;
      else if (app_id) appId = (await resolveApp(apps, app_id)).id;
      else throw new AppError(422, "validation_failed", "Give script_id or app_id.", { field: "script_id" });
      ctx.gate.assertScope(principal(req), "app:read", appId);
      const result = await routes.check(appId, input);
      return { ok: result.conflict === null, app_id: appId, route: result.route, conflict: result.conflict };
    },
  );

  api.post(
    "/api/v1/admin/routes::match",
    {
      config: { auth: platformAuth.spec({}) },
      schema: { body: matchBody, response: { 200: MatchResult, ...errors(401, 403, 422) } },
    },
    async (req) => {
      const body = req.body;
      let url: URL;
      try {
        url = new URL(body.url, "http://localhost");
      } catch {
        throw new AppError(422, "validation_failed", "url is not a valid URL.", { field: "url" });
      }
      const host = normalizeHost(url.host || "localhost");
      const m = ctx.routeTable.match(host, body.method.toUpperCase(), url.pathname);
      if (!m) return { matched: false as const };
      ctx.gate.assertScope(principal(req), "app:read", m.app_id);
      return {
        matched: true as const,
        app_id: m.app_id,
        script_id: m.script_id,
        route: m.route,
        params: m.params,
        rest: m.rest,
      };
    },
  );
};
