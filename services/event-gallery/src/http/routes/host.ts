import { parseInput } from "@app/kit/validate";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import { listAudit } from "../../moderation/audit.js";
import type { ModerationService } from "../../moderation/service.js";
import { idParam } from "./social.js";

const AuditQuery = z.object({
  limit: z.coerce.number().int().optional(),
  cursor: z.string().max(512).optional(),
});

/** Host moderation routes (hosts and the admin). */
export function registerHostRoutes(app: FastifyInstance, ctx: GalleryContext, moderation: ModerationService) {
  const host = { minRole: "host", write: true } as const;

  app.get("/host/users", async (req) => {
    await ctx.auth.requireUser(req, { minRole: "host" });
    return { users: await moderation.listUsers() };
  });
  app.post("/host/users/:id/ban", async (req) => {
    const actor = await ctx.auth.requireUser(req, host);
    return { user: await moderation.setBanned(actor, idParam(req.params, "user"), true) };
  });
  app.post("/host/users/:id/unban", async (req) => {
    const actor = await ctx.auth.requireUser(req, host);
    return { user: await moderation.setBanned(actor, idParam(req.params, "user"), false) };
  });
  app.post("/host/users/:id/promote", async (req) => {
    const actor = await ctx.auth.requireUser(req, host);
    return { user: await moderation.setRole(actor, idParam(req.params, "user"), "host") };
  });
  app.post("/host/users/:id/demote", async (req) => {
    const actor = await ctx.auth.requireUser(req, host);
    return { user: await moderation.setRole(actor, idParam(req.params, "user"), "guest") };
  });
  app.post("/host/users/:id/reset-pin", async (req) => {
    const actor = await ctx.auth.requireUser(req, host);
    return { pin: await moderation.resetPin(actor, idParam(req.params, "user")) };
  });
  app.delete("/host/upload/:id", async (req, reply) => {
    const actor = await ctx.auth.requireUser(req, host);
    await moderation.takedownUpload(actor, idParam(req.params));
    return reply.code(204).send();
  });
  app.delete("/host/comment/:id", async (req, reply) => {
    const actor = await ctx.auth.requireUser(req, host);
    await moderation.removeComment(actor, idParam(req.params, "comment"));
    return reply.code(204).send();
  });
  app.get("/host/audit", async (req) => {
    await ctx.auth.requireUser(req, { minRole: "host" });
    const q = parseInput(AuditQuery, req.query ?? {});
    const limit = Math.min(100, Math.max(1, q.limit ?? 50));
    return listAudit(ctx.database.db, { limit, cursor: q.cursor });
  });
}
