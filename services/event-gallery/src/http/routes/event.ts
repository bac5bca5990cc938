import type { FastifyInstance } from "fastify";
import type { GalleryContext } from "../../context.js";
import { applyTransition, hostEventView, type Transition } from "../../event/transitions.js";
import type { ExportWorker } from "../../export/worker.js";

const TRANSITIONS: readonly Transition[] = ["lock", "unlock", "release", "reopen"];

/** Host event routes: the event view and its transitions. */
export function registerEventRoutes(api: FastifyInstance, ctx: GalleryContext, exports: ExportWorker): void {
  api.get("/host/event", async (req) => {
    await ctx.auth.requireUser(req, { minRole: "host" });
    return hostEventView(ctx);
  });

  const effects = {
    jobsArmed: () => exports.kick(),
    releaseWithdrawn: () => exports.pruneArchives(),
  };
  for (const transition of TRANSITIONS) {
    api.post(`/host/event/${transition}`, async (req) => {
      const user = await ctx.auth.requireUser(req, { minRole: "host", write: true });
      return { event: await applyTransition(ctx, user, transition, effects) };
    });
  }
}
