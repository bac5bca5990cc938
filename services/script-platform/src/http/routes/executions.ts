import { parseInput } from "@app/kit/validate";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { executionsRepo } from "../../execution/executions-repo.js";

const query = z.strictObject({
  cursor: z.string().max(64).optional(),
  limit: z.coerce.number().int().min(1).max(200).optional(),
  status: z.enum(["ok", "error", "timeout", "limit", "succeeded", "failed"]).optional(),
  script_id: z.string().max(64).optional(),
  invocation_type: z.string().max(32).optional(),
  since: z.iso.datetime({ offset: true }).optional(),
});

/** GET /api/v1/admin/apps/{id}/executions: recent runs, newest first, with status, duration and logs. */
export const executionRoutes: RouteModule = (app, ctx) => {
  const repo = executionsRepo(ctx.database);
  app.get<{ Params: { id: string } }>("/api/v1/admin/apps/:id/executions", async (req) => {
    const target = await ctx.apps.resolve(req.params.id);
    await ctx.gate.requireAdmin(req, "app:read", target.id);
    const q = parseInput(query, req.query);
    return repo.list(target.id, {
      before: q.cursor ?? null,
      limit: q.limit ?? 50,
      status: q.status ?? null,
      script_id: q.script_id ?? null,
      invocation_type: q.invocation_type ?? null,
      since: q.since ? new Date(q.since).toISOString() : null,
    });
  });
};
