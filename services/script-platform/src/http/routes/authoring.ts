import { notFound } from "@app/kit/errors";
import { binary, errors, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModuleWith } from "../../context.js";
import { SCRIPT_LANGUAGES } from "../../control/script-language.js";
import { createScripts, savedBy, scriptNotFound } from "../../control/scripts.js";
import { createDraftRunner } from "../../execution/draft-run.js";
import type { Runtime } from "../../execution/runtime.js";
import { SDK_TYPES } from "../../sdk/sdk-types.js";
import { platformAuth, principal, targetScript } from "../route-auth.js";
import { Script } from "../schemas.js";

const versionsQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.coerce.number().int().min(1).optional(),
});
const versionNumber = z.coerce
  .number()
  .int()
  .min(1)
  .max(2 ** 31);

const VersionSummary = z.object({
  version: z.number().int(),
  created_at: z.string(),
  created_by: z.string().nullable(),
  language: z.enum(SCRIPT_LANGUAGES),
  size: z.number().int(),
  sha256: z.string(),
});
const VersionDetail = VersionSummary.extend({
  source: z.string(),
  sandbox: z.record(z.string(), z.unknown()),
});
const RunError = z.object({
  code: z.string(),
  message: z.string(),
  stack: z.string().nullable(),
  line: z.number().int().nullable(),
  column: z.number().int().nullable(),
});
const RunResult = z.object({
  status: z.number().int(),
  headers: z.record(z.string(), z.string()),
  body: z.unknown(),
  logs: z.array(z.object({ level: z.string(), message: z.string(), at: z.string() })),
  duration_ms: z.number(),
  error: RunError.nullable(),
});

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
    headers: z.record(z.string().max(256), z.string().max(8192)).optional(),
    body: z.unknown().optional(),
  }),
  fire_triggers: z.boolean().optional(),
});

/**
 * The authoring API (contract, "Authoring"): script versions and restore, draft runs from the
 * editor, and the SDK's TypeScript declarations.
 */
export const authoringRoutes: RouteModuleWith<{ runDraft: Runtime["runDraft"] }> = (app, ctx, engine) => {
  const scripts = createScripts({
    database: ctx.database,
    clock: ctx.clock,
    sandbox: ctx.sandbox,
    onRoutesChanged: (appId) => ctx.routeTable.changed(appId),
  });
  const drafts = createDraftRunner({ sandbox: ctx.sandbox, runDraft: engine.runDraft });
  const base = "/api/v1/admin/scripts";
  const api = typed(app);

  // find-my-way cannot end a parameter at a literal ":", so `<id>:run` / `<n>:restore` is split here.
  const action = (segment: string, verb: string): string => {
    const suffix = `:${verb}`;
    if (!segment.endsWith(suffix)) throw notFound("No such route.", "not_found");
    return segment.slice(0, -suffix.length);
  };
  const scriptOf = async (id: string) => {
    const s = await scripts.repo.byId(id);
    if (!s) throw scriptNotFound();
    return s;
  };

  api.get(
    "/api/v1/sdk/types.d.ts",
    { schema: { response: { 200: binary("application/typescript", "The SDK's TypeScript declarations") } } },
    async (_req, reply) =>
      reply
        .header("content-type", "application/typescript; charset=utf-8")
        .header("cache-control", "public, max-age=300")
        .send(SDK_TYPES),
  );

  api.get(
    `${base}/:id/versions`,
    {
      config: { auth: platformAuth.spec({ scope: "script:read", scriptParam: "id" }) },
      schema: {
        params: z.object({ id: z.string() }),
        querystring: versionsQuery,
        response: {
          200: z.object({ items: z.array(VersionSummary), next_cursor: z.string().nullable() }),
          ...errors(401, 403, 404, 422),
        },
      },
    },
    async (req) => {
      const q = req.query;
      const items = await scripts.versions(targetScript(req).id, {
        before: q.cursor ?? null,
        limit: q.limit,
      });
      const last = items[items.length - 1];
      return { items, next_cursor: items.length === q.limit && last ? String(last.version) : null };
    },
  );

  api.get(
    `${base}/:id/versions/:n`,
    {
      config: { auth: platformAuth.spec({ scope: "script:read", scriptParam: "id" }) },
      schema: {
        params: z.object({ id: z.string(), n: versionNumber }),
        response: { 200: VersionDetail, ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => scripts.version(targetScript(req).id, req.params.n),
  );

  api.post(
    `${base}/:id/versions/:action`,
    {
      config: { auth: platformAuth.spec({ scope: "script:write", scriptParam: "id" }) },
      schema: {
        params: z.object({ id: z.string(), action: z.string().max(40) }),
        response: { 200: Script, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (req) => {
      const n = versionNumber.safeParse(action(req.params.action, "restore"));
      if (!n.success) throw notFound("No such version.", "version_not_found");
      return scripts.restore(targetScript(req).id, n.data, savedBy(principal(req)));
    },
  );

  api.post(
    `${base}/:action`,
    {
      config: { auth: platformAuth.spec({}) },
      schema: {
        params: z.object({ action: z.string().max(80) }),
        body: runBody,
        response: { 200: RunResult, ...errors(401, 403, 404, 422, 503) },
      },
    },
    async (req) => {
      const s = await scriptOf(action(req.params.action, "run"));
      ctx.gate.assertScope(principal(req), "script:write", s.app_id);
      return drafts.run(s, req.body, principal(req));
    },
  );
};
