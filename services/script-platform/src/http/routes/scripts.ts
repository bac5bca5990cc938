import { AppError } from "@app/kit/errors";
import { parseInput } from "@app/kit/validate";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { resolveApp } from "../../control/apps.js";
import { appsRepo } from "../../control/apps-repo.js";
import { appsWithScope } from "../../control/scopes.js";
import { SCRIPT_LANGUAGES } from "../../control/script-language.js";
import { createScripts, savedBy, scriptNotFound } from "../../control/scripts.js";
import { listOf, pageOf } from "../paging.js";

const fields = {
  name: z.string().min(1).max(100),
  kind: z.enum(["endpoint", "module"]),
  source: z.string(),
  description: z.string().max(10_000),
  timeout_seconds: z.number().int("must be an integer"),
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
const listQuery = z.object({ app_id: z.string().optional(), app: z.string().optional() }).passthrough();

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

  const scriptOf = async (id: string) => {
    const s = await scripts.repo.byId(id);
    if (!s) throw scriptNotFound();
    return s;
  };

  app.post(base, async (req, reply) => {
    const body = parseInput(createBody, req.body);
    const target = await resolveApp(apps, body.app_id);
    const p = await ctx.gate.requireAdmin(req, "script:write", target.id);
    const { app_id: _, ...input } = body;
    return reply.code(201).send(await scripts.create(target.id, input, savedBy(p)));
  });

  app.get(base, async (req) => {
    const p = await ctx.gate.requireAdmin(req);
    const q = parseInput(listQuery, req.query ?? {});
    const page = pageOf({
      limit: (req.query as Record<string, unknown>)?.limit,
      cursor: (req.query as Record<string, unknown>)?.cursor,
    });
    const filter = q.app_id ?? q.app;
    const visible = appsWithScope(p, "script:read");
    let appIds: string[] | null = visible ? [...visible] : null;
    if (filter) {
      const a = await resolveApp(apps, filter);
      appIds = !visible || visible.has(a.id) ? [a.id] : [];
    }
    const rows = await scripts.repo.list({ appIds, after: page.after, limit: page.limit });
    return listOf(await Promise.all(rows.map((r) => scripts.view(r))), page.limit);
  });

  app.get(`${base}/:id`, async (req) => {
    const s = await scriptOf((req.params as { id: string }).id);
    await ctx.gate.requireAdmin(req, "script:read", s.app_id);
    return scripts.view(s);
  });

  app.put(`${base}/:id`, async (req) => {
    const s = await scriptOf((req.params as { id: string }).id);
    const p = await ctx.gate.requireAdmin(req, "script:write", s.app_id);
    const body = parseInput(updateBody, req.body);
    if (body.app_id !== undefined) {
      const a = await resolveApp(apps, body.app_id).catch(() => null);
      if (a?.id !== s.app_id)
        throw new AppError(422, "validation_failed", "A script cannot move to another app.", {
          field: "app_id",
        });
    }
    const { app_id: _, ...input } = body;
    return scripts.update(s.id, input, savedBy(p));
  });

  app.delete(`${base}/:id`, async (req, reply) => {
    const s = await scriptOf((req.params as { id: string }).id);
    await ctx.gate.requireAdmin(req, "script:write", s.app_id);
    await scripts.remove(s.id);
    return reply.code(204).send();
  });
};
