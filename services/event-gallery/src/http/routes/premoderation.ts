import { notFound } from "@app/kit/errors";
import { isUuid } from "@app/kit/ids";
import { parseInput } from "@app/kit/validate";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import type { PremoderationService } from "../../premoderation/service.js";

const q = z.string().max(4_000).optional();
const PendingQuery = z.object({ limit: q, cursor: q });

/** An id that is not a UUID cannot exist: 404 before any query. */
function uploadId(params: unknown): string {
  const id = (params as { id?: unknown } | null)?.id;
  if (typeof id !== "string" || !isUuid(id)) throw notFound("No such upload.");
  return id;
}

/** Pre-moderation queue for hosts (contract "Hosts and guests"). */
export function registerPremoderationRoutes(app: FastifyInstance, ctx: GalleryContext, premod: PremoderationService) {
  const host = { minRole: "host", write: true } as const;

  app.get("/host/pending", async (req) => {
    const user = await ctx.auth.requireUser(req, { minRole: "host" });
    return premod.listPending(user, parseInput(PendingQuery, req.query ?? {}));
  });
  app.post("/host/upload/:id/approve", async (req) => {
    const actor = await ctx.auth.requireUser(req, host);
    return { upload: await premod.approve(actor, uploadId(req.params)) };
  });
  app.post("/host/upload/:id/reject", async (req, reply) => {
    const actor = await ctx.auth.requireUser(req, host);
    await premod.reject(actor, uploadId(req.params));
    return reply.code(204).send();
  });
}
