import { errors, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { EXECUTION_STATUSES, executionsRepo } from "../../execution/executions-repository.js";
import { platformAuth, targetApp } from "../route-auth.js";
import { Execution, page } from "../schemas.js";

const query = z.strictObject({
  cursor: z.string().max(64).optional(),
  limit: z.coerce.number().int().min(1).max(200).optional(),
  status: z.enum(EXECUTION_STATUSES).optional(),
  script_id: z.string().max(64).optional(),
  invocation_type: z.string().max(32).optional(),
  since: z.iso.datetime({ offset: true }).optional(),
});

/** GET /api/v1/admin/apps/{id}/executions: recent runs, newest first, with status, duration and logs. */
export const executionRoutes: RouteModule = (app, ctx) => {
  const repo = executionsRepo(ctx.database);
  typed(app).get(
    "/api/v1/admin/apps/:id/executions",
    {
      config: { auth: platformAuth.spec({ scope: "app:read", appParam: "id" }) },
      schema: {
        params: z.object({ id: z.string().describe("App id or slug") }),
        querystring: query,
        response: { 200: page(Execution), ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => {
      const q = req.query;
      return repo.list(targetApp(req).id, {
        before: q.cursor ?? null,
        limit: q.limit ?? 50,
        status: q.status ?? null,
        script_id: q.script_id ?? null,
        invocation_type: q.invocation_type ?? null,
        since: q.since ? new Date(q.since).toISOString() : null,
      });
    },
  );
};
