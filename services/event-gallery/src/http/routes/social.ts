import { notFound } from "@app/kit/errors";
import { isUuid } from "@app/kit/ids";
import { parseInput } from "@app/kit/validate";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import type { SocialService } from "../../social/service.js";

const CommentBody = z.strictObject({ text: z.string().max(4000) });

/** Path ids that are not UUIDs cannot exist: answer 404 before touching the database. */
export function idParam(params: unknown, what = "upload"): string {
  const id = (params as { id?: string }).id ?? "";
  if (!isUuid(id)) throw notFound(`No such ${what}.`);
  return id;
}

/** Likes and comments. */
export function registerSocialRoutes(app: FastifyInstance, ctx: GalleryContext, social: SocialService) {
  app.put("/upload/:id/like", async (req) => {
    const user = await ctx.auth.requireUser(req, { write: true });
    return social.setLike(user, idParam(req.params), true);
  });
  app.delete("/upload/:id/like", async (req) => {
    const user = await ctx.auth.requireUser(req, { write: true });
    return social.setLike(user, idParam(req.params), false);
  });
  app.get("/upload/:id/comments", async (req) => {
    await ctx.auth.requireUser(req);
    return { comments: await social.listComments(idParam(req.params)) };
  });
  app.post("/upload/:id/comments", async (req, reply) => {
    const user = await ctx.auth.requireUser(req, { write: true });
    const body = parseInput(CommentBody, req.body ?? {});
    const comment = await social.addComment(user, idParam(req.params), body.text);
    return reply.code(201).send({ comment });
  });
  app.delete("/comment/:id", async (req, reply) => {
    const user = await ctx.auth.requireUser(req, { write: true });
    await social.deleteOwnComment(user, idParam(req.params, "comment"));
    return reply.code(204).send();
  });
}
