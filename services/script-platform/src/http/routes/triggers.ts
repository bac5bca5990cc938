import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModuleWith } from "../../context.js";
import { presentTrigger } from "../../triggers/model.js";
import { principalToJson } from "../../triggers/principal.js";
import {
  createTrigger,
  deleteTrigger,
  getTrigger,
  listTriggers,
  patchTrigger,
  type TriggerDeps,
} from "../../triggers/service.js";
import type { RetryPolicy } from "../../triggers/settings.js";
import { AppParams, appAdmin, principal, targetApp } from "../route-auth.js";
import { page, Trigger } from "../schemas.js";

/** `?cursor=&limit=` of the list endpoints (limit 1..200, default 50). */
export const pageQuery = z.object({
  cursor: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

// Trigger, topic and dead-letter management map to app:admin on the app in the path (seed):
// routes declare `config: appAdmin` and read the app with targetApp(req).

/** A trigger body: `{script_id, enabled?, retry?}` plus the kind's detail; checked by the trigger service. */
const TriggerBody = z
  .unknown()
  .describe(
    "{script_id, enabled?, retry?: {max_attempts, backoff_ms, max_backoff_ms}} plus the kind's detail",
  );
const TriggerParams = AppParams.extend({ id: z.string() });

/** Trigger management: POST …/triggers/{kind}, GET list, GET/PATCH/DELETE …/triggers/{id}. */
export const triggerRoutes: RouteModuleWith<{ retry: RetryPolicy }> = (app, ctx, settings) => {
  const deps: TriggerDeps = {
    database: ctx.database,
    clock: ctx.clock,
    secretBox: ctx.secretBox,
    scripts: ctx.scripts,
  };
  // presentTrigger builds a plain record; the response schema (checked in tests) names its shape.
  const present = (t: Parameters<typeof presentTrigger>[0]) => presentTrigger(t, settings.retry) as Trigger;

  const api = typed(app);

  api.post(
    "/api/v1/admin/apps/:app/triggers/:kind",
    {
      config: appAdmin,
      schema: {
        params: AppParams.extend({
          kind: z.string().describe("kv, docs, files, pubsub, cron, email, dead_letter"),
        }),
        body: TriggerBody,
        response: { 201: Trigger, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (req, reply) => {
      const t = await createTrigger(
        deps,
        targetApp(req).id,
        req.params.kind,
        req.body ?? {},
        principalToJson(principal(req)),
      );
      return reply.code(201).send(present(t));
    },
  );

  api.get(
    "/api/v1/admin/apps/:app/triggers",
    {
      config: appAdmin,
      schema: {
        params: AppParams,
        querystring: pageQuery,
        response: { 200: page(Trigger), ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => {
      const p = await listTriggers(deps, targetApp(req).id, req.query);
      return { items: p.items.map(present), next_cursor: p.next_cursor };
    },
  );

  api.get(
    "/api/v1/admin/apps/:app/triggers/:id",
    {
      config: appAdmin,
      schema: { params: TriggerParams, response: { 200: Trigger, ...errors(401, 403, 404) } },
    },
    async (req) => present(await getTrigger(deps, targetApp(req).id, req.params.id)),
  );

  api.patch(
    "/api/v1/admin/apps/:app/triggers/:id",
    {
      config: appAdmin,
      schema: {
        params: TriggerParams,
        body: TriggerBody,
        response: { 200: Trigger, ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => present(await patchTrigger(deps, targetApp(req).id, req.params.id, req.body ?? {})),
  );

  api.delete(
    "/api/v1/admin/apps/:app/triggers/:id",
    {
      config: appAdmin,
      schema: { params: TriggerParams, response: { 204: NoBody, ...errors(401, 403, 404) } },
    },
    async (req, reply) => {
      await deleteTrigger(deps, targetApp(req).id, req.params.id);
      return reply.code(204).send();
    },
  );
};
