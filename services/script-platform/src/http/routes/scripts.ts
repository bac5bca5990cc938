import { AppError } from "@app/kit/errors";
import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { resolveApp } from "../../control/apps.js";
import { appsRepo } from "../../control/apps-repository.js";
import { TIMEOUT_CEILING_S } from "../../control/sandbox-policy.js";
import { appsWithScope } from "../../control/scopes.js";
import { SCRIPT_LANGUAGES } from "../../control/script-language.js";
import { createScripts, savedBy } from "../../control/scripts.js";
import { listOf, PageQuery, pageOf } from "../paging.js";
import { platformAuth, principal, targetScript } from "../route-auth.js";
import { page, Script } from "../schemas.js";

const fields = {
  name: z.string().min(1).max(100),
  kind: z.enum(["endpoint", "module"]),
  source: z.string(),
  description: z.string().max(10_000),
  // The bound is checked by the domain (422 above_ceiling with the ceiling); the document states it.
  timeout_seconds: z.number().int("must be an integer").meta({ minimum: 1, maximum: TIMEOUT_CEILING_S }),
  // Checked by the sandbox policy (unknown keys, integers, ceilings) for precise errors.
  sandbox: z.unknown(),
  memory_limit_mb: z.number().int("must be an integer").min(1).max(1_048_576).nullable(),
  language: z.enum(SCRIPT_LANGUAGES),
};
const createBody = z.strictObject({
  app_id: z.string().min(1).max(100),
  name: fields.name,
  kind: fields.kind.default("endpoint"),
  source: fields.source,
  description: fields.description.optional(),
  timeout_seconds: fields.timeout_seconds.optional(),
  sandbox: fields.sandbox.optional(),
  memory_limit_mb: fields.memory_limit_mb.optional(),
  language: fields.language.optional(),
});
const updateBody = z.strictObject({
  app_id: z.string().optional(),
  name: fields.name.optional(),
  kind: fields.kind.optional(),
  source: fields.source.optional(),
  description: fields.description.optional(),
  timeout_seconds: fields.timeout_seconds.optional(),
  sandbox: fields.sandbox.optional(),
  memory_limit_mb: fields.memory_limit_mb.optional(),
  language: fields.language.optional(),
});
const listQuery = PageQuery.extend({ app_id: z.string().optional(), app: z.string().optional() });
const idParams = z.object({ id: z.string() });

/** Scripts under /api/v1/admin/scripts. */
export const scriptRoutes: RouteModule = (app, ctx) => {
  const scripts = createScripts({
    database: ctx.database,
    clock: ctx.clock,
    sandbox: ctx.sandbox,
    onRoutesChanged: (appId) => ctx.routeTable.changed(appId),
  });
  const apps = appsRepo(ctx.database);
  const base = "/api/v1/admin/scripts";

  const api = typed(app);

  api.post(
    base,
    {
      config: { auth: platformAuth.spec({}) },
      schema: { body: createBody, response: { 201: Script, ...errors(401, 403, 404, 409, 422) } },
    },
    async (req, reply) => {
      // The app comes from the body: its scope is checked once the body is known.
      const target = await resolveApp(apps, req.body.app_id);
      ctx.gate.assertScope(principal(req), "script:write", target.id);
      const { app_id: _, ...input } = req.body;
      return reply.code(201).send(await scripts.create(target.id, input, savedBy(principal(req))));
    },
  );

  api.get(
    base,
    {
      config: { auth: platformAuth.spec({}) },
      schema: { querystring: listQuery, response: { 200: page(Script), ...errors(401, 404, 422) } },
    },
    async (req) => {
      const q = req.query;
      const p = pageOf({ limit: q.limit, cursor: q.cursor });
      const filter = q.app_id ?? q.app;
      const visible = appsWithScope(principal(req), "script:read");
      let appIds: string[] | null = visible ? [...visible] : null;
      if (filter) {
        const a = await resolveApp(apps, filter);
        appIds = !visible || visible.has(a.id) ? [a.id] : [];
      }
      const rows = await scripts.repo.list({ appIds, after: p.after, limit: p.limit });
      return listOf(await Promise.all(rows.map((r) => scripts.view(r))), p.limit);
    },
  );

  api.get(
    `${base}/:id`,
    {
      config: { auth: platformAuth.spec({ scope: "script:read", scriptParam: "id" }) },
      schema: { params: idParams, response: { 200: Script, ...errors(401, 403, 404) } },
    },
    async (req) => scripts.view(targetScript(req)),
  );

  api.put(
    `${base}/:id`,
    {
      config: { auth: platformAuth.spec({ scope: "script:write", scriptParam: "id" }) },
      schema: {
        params: idParams,
        body: updateBody,
        response: { 200: Script, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (req) => {
      const s = targetScript(req);
      const body = req.body;
      if (body.app_id !== undefined) {
        const a = await resolveApp(apps, body.app_id).catch(() => null);
        if (a?.id !== s.app_id)
          throw new AppError(422, "validation_failed", "A script cannot move to another app.", {
            field: "app_id",
          });
      }
      const { app_id: _, ...input } = body;
      return scripts.update(s.id, input, savedBy(principal(req)));
    },
  );

  api.delete(
    `${base}/:id`,
    {
      config: { auth: platformAuth.spec({ scope: "script:write", scriptParam: "id" }) },
      schema: { params: idParams, response: { 204: NoBody, ...errors(401, 403, 404, 409) } },
    },
    async (req, reply) => {
      await scripts.remove(targetScript(req).id);
      return reply.code(204).send();
    },
  );
};
