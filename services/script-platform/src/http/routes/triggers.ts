import { parseInput } from "@app/kit/validate";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import type { PlatformContext, RouteModule } from "../../context.js";
import { presentTrigger } from "../../triggers/model.js";
import { principalToJson } from "../../triggers/principal.js";
import { triggerRuntime } from "../../triggers/runtime-config.js";
import {
  createTrigger,
  deleteTrigger,
  getTrigger,
  listTriggers,
  patchTrigger,
  type TriggerDeps,
} from "../../triggers/service.js";

/** `?cursor=&limit=` of the list endpoints (limit 1..200, default 50). */
export const pageQuery = z.object({
  cursor: z.string().min(1).max(200).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});

/**
 * The app named in the path (id or slug; 404 `app_not_found`) after checking that the caller
 * holds `app:admin` on it (seed: trigger, topic and dead-letter management map to app:admin).
 */
export async function adminApp(ctx: PlatformContext, req: FastifyRequest, idOrSlug: string) {
  const app = await ctx.apps.resolve(idOrSlug);
  const principal = await ctx.gate.requireAdmin(req, "app:admin", app.id);
  return { app, principal };
}

type AppParams = { Params: { app: string } };
type TriggerParams = { Params: { app: string; id: string } };

/** Trigger management: POST …/triggers/{kind}, GET list, GET/PATCH/DELETE …/triggers/{id}. */
export const triggerRoutes: RouteModule = (app, ctx) => {
  const deps: TriggerDeps = {
    database: ctx.database,
    clock: ctx.clock,
    secretBox: ctx.secretBox,
    scripts: ctx.scripts,
  };
  const present = (t: Parameters<typeof presentTrigger>[0]) =>
    presentTrigger(t, triggerRuntime().settings.retry);

  app.post<{ Params: { app: string; kind: string } }>(
    "/api/v1/admin/apps/:app/triggers/:kind",
    async (req, reply) => {
      const { app: a, principal } = await adminApp(ctx, req, req.params.app);
      const t = await createTrigger(deps, a.id, req.params.kind, req.body ?? {}, principalToJson(principal));
      return reply.code(201).send(present(t));
    },
  );

  app.get<AppParams>("/api/v1/admin/apps/:app/triggers", async (req) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    const q = parseInput(pageQuery, req.query);
    const page = await listTriggers(deps, a.id, q);
    return { items: page.items.map(present), next_cursor: page.next_cursor };
  });

  app.get<TriggerParams>("/api/v1/admin/apps/:app/triggers/:id", async (req) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    return present(await getTrigger(deps, a.id, req.params.id));
  });

  app.patch<TriggerParams>("/api/v1/admin/apps/:app/triggers/:id", async (req) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    return present(await patchTrigger(deps, a.id, req.params.id, req.body ?? {}));
  });

  app.delete<TriggerParams>("/api/v1/admin/apps/:app/triggers/:id", async (req, reply) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    await deleteTrigger(deps, a.id, req.params.id);
    return reply.code(204).send();
  });
};
