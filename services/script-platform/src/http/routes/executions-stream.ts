import { unavailable } from "@app/kit/errors";
import { openSse } from "@app/kit/http";
import { binary, errors, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { EXECUTION_STATUSES, executionsRepo } from "../../execution/executions-repository.js";
import { platformAuth, targetApp } from "../route-auth.js";

const query = z.strictObject({
  status: z.enum(EXECUTION_STATUSES).optional(),
  script_id: z.string().max(64).optional(),
  invocation_type: z.string().max(32).optional(),
});

/** How often a tail looks for new runs: the executions log is in the database, so every process sees every run. */
export const TAIL_POLL_MS = 1000;
/** Open tails per process; beyond it 503 with Retry-After. */
export const MAX_TAILS = 200;
/** Records read per poll. */
const BATCH = 500;
/**
 * Records commit in group commits, so one that finished a little earlier can become visible after
 * a later one: each poll re-reads this window behind the newest record sent and skips ids already sent.
 */
export const TAIL_OVERLAP_MS = 10_000;

/**
 * GET /api/v1/admin/apps/{id}/executions/stream (contract "Authoring"): SSE, `event: execution`,
 * `id:` the execution id, `data:` the record, with the list's filters. Sends runs that finish after
 * the connection opened, or from `Last-Event-ID` on when the browser reconnects.
 */
export const executionStreamRoutes: RouteModule = (app, ctx) => {
  const repo = executionsRepo(ctx.database);
  let open = 0;
  typed(app).get(
    "/api/v1/admin/apps/:id/executions/stream",
    {
      config: { auth: platformAuth.spec({ scope: "app:read", appParam: "id" }) },
      schema: {
        params: z.object({ id: z.string() }),
        querystring: query,
        response: {
          200: binary("text/event-stream", "event: execution, data: the record"),
          ...errors(401, 403, 404, 422, 503),
        },
      },
    },
    async (req, reply) => {
      const target = targetApp(req);
      const q = req.query;
      if (open >= MAX_TAILS) throw unavailable(5, "Too many live tails are open; try again later.", "busy");
      const resume = req.headers["last-event-id"];
      const resumeAt =
        typeof resume === "string" && /^[0-9a-f-]{36}$/i.test(resume)
          ? await repo.finishedAtOf(target.id, resume)
          : null;
      let newest = ctx.clock.now();
      if (resumeAt) newest = Date.parse(resumeAt);
      // id → finish time of what was sent inside the overlap window.
      const sent = new Map<string, number>(resume && resumeAt ? [[resume as string, newest]] : []);
      const floor = newest;
      // Runs already recorded at the start are history, not news (the list shows them).
      if (!resumeAt)
        for (const r of await repo.listFinishedSince(target.id, new Date(floor).toISOString(), q, BATCH))
          sent.set(r.id, floor);
      const stream = openSse(reply, { clock: ctx.clock });
      open++;
      let polling = false;
      const poll = async () => {
        if (polling || stream.closed) return;
        polling = true;
        try {
          const from = Math.max(floor, newest - TAIL_OVERLAP_MS);
          const rows = await repo.listFinishedSince(target.id, new Date(from).toISOString(), q, BATCH);
          for (const r of rows) {
            if (sent.has(r.id)) continue;
            const at = r.finished_at ? Date.parse(r.finished_at) : from;
            sent.set(r.id, at);
            if (at > newest) newest = at;
            if (!stream.send("execution", r, r.id)) break;
          }
          for (const [id, at] of sent) if (at < newest - TAIL_OVERLAP_MS) sent.delete(id);
        } catch (err) {
          ctx.logger.warn({ err }, "executions tail poll failed");
        } finally {
          polling = false;
        }
      };
      const timer = ctx.clock.setInterval(() => void poll(), TAIL_POLL_MS);
      stream.onClose(() => {
        timer.cancel();
        open--;
      });
    },
  );
};
