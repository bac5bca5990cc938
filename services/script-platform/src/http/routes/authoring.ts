import { notFound } from "@app/kit/errors";
import { parseInput } from "@app/kit/validate";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { createDraftRunner } from "../../control/draft-run.js";
import { SCRIPT_LANGUAGES } from "../../control/script-language.js";
import { createScripts, savedBy, scriptNotFound } from "../../control/scripts.js";
import { SDK_TYPES } from "../../sdk/sdk-types.js";

const versionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.coerce.number().int().min(1).optional(),
});
const versionParams = z.object({
  id: z.string(),
  n: z.coerce
    .number()
    .int()
    .min(1)
    .max(2 ** 31),
});

const header = z.string().max(8192);
const runBody = z.strictObject({
  source: z.string().optional(),
  language: z.enum(SCRIPT_LANGUAGES).optional(),
  request: z.strictObject({
    method: z
      .string()
      .regex(/^[A-Za-z]{1,16}$/, "must be an HTTP method")
      .default("GET"),
    path: z.string().startsWith("/", "must start with /").max(2048).default("/"),
    query: z.record(z.string(), z.string()).optional(),
    headers: z.record(z.string().max(256), header).optional(),
    body: z.unknown().optional(),
  }),
  fire_triggers: z.boolean().optional(),
});

/**
 * The authoring API (contract, "Authoring"): script versions and restore, draft runs from the
 * editor, and the SDK's TypeScript declarations.
 */
export const authoringRoutes: RouteModule = (app, ctx) => {
  const scripts = createScripts({
    database: ctx.database,
    clock: ctx.clock,
    sandbox: ctx.sandbox,
    onRoutesChanged: (appId) => ctx.routeTable.changed(appId),
  });
  const drafts = createDraftRunner(ctx);
  const base = "/api/v1/admin/scripts";

  const scriptOf = async (id: string) => {
    const s = await scripts.repo.byId(id);
    if (!s) throw scriptNotFound();
    return s;
  };

  app.get("/api/v1/sdk/types.d.ts", async (_req, reply) =>
    reply
      .header("content-type", "application/typescript; charset=utf-8")
      .header("cache-control", "public, max-age=300")
      .send(SDK_TYPES),
  );

  app.get(`${base}/:id/versions`, async (req) => {
    const s = await scriptOf((req.params as { id: string }).id);
    await ctx.gate.requireAdmin(req, "script:read", s.app_id);
    const q = parseInput(versionsQuery, req.query ?? {});
    const items = await scripts.versions(s.id, { before: q.cursor ?? null, limit: q.limit });
    const last = items[items.length - 1];
    return { items, next_cursor: items.length === q.limit && last ? String(last.version) : null };
  });

  app.get(`${base}/:id/versions/:n`, async (req) => {
    const p = parseInput(versionParams, req.params);
    const s = await scriptOf(p.id);
    await ctx.gate.requireAdmin(req, "script:read", s.app_id);
    return scripts.version(s.id, p.n);
  });

  // find-my-way cannot end a parameter at a literal ":", so the action suffix is parsed here.
  const action = (segment: string, verb: string): string => {
    const suffix = `:${verb}`;
    if (!segment.endsWith(suffix)) throw notFound("No such route.", "not_found");
    return segment.slice(0, -suffix.length);
  };

  app.post(`${base}/:id/versions/:action`, async (req) => {
    const raw = req.params as { id: string; action: string };
    const p = parseInput(versionParams, { id: raw.id, n: action(raw.action, "restore") });
    const s = await scriptOf(p.id);
    const principal = await ctx.gate.requireAdmin(req, "script:write", s.app_id);
    return scripts.restore(s.id, p.n, savedBy(principal));
  });

  app.post(`${base}/:action`, async (req) => {
    const s = await scriptOf(action((req.params as { action: string }).action, "run"));
    const principal = await ctx.gate.requireAdmin(req, "script:write", s.app_id);
    const body = parseInput(runBody, req.body ?? {});
    return drafts.run(s, body, principal);
  });
};
