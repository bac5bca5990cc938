import { errors, NoBody, typed, uuidParam } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import type { SocialService } from "../../social/service.js";
import { auth, principal } from "../route-auth.js";
import { Comment, Like } from "../schemas.js";

const CommentBody = z.strictObject({ text: z.string().max(4000) });

/** `{id}` path params: ids that are not UUIDs cannot exist, so they answer 404 before any query. */
export const IdParams = (what = "upload") => z.object({ id: uuidParam(`No such ${what}.`) });

/** Likes and comments. */
export function registerSocialRoutes(app: FastifyInstance, _ctx: GalleryContext, social: SocialService) {
  const api = typed(app);
  const params = IdParams();
  const like = {
    config: auth.writer,
    schema: { params, response: { 200: Like, ...errors(401, 403, 404, 429) } },
  };
  api.put("/upload/:id/like", like, async (req) => social.setLike(principal(req), req.params.id, true));
  api.delete("/upload/:id/like", like, async (req) => social.setLike(principal(req), req.params.id, false));
  api.get(
    "/upload/:id/comments",
    {
      config: auth.user,
      schema: { params, response: { 200: z.object({ comments: z.array(Comment) }), ...errors(401, 404) } },
    },
    async (req) => ({ comments: await social.listComments(req.params.id) }),
  );
  api.post(
    "/upload/:id/comments",
    {
      config: auth.writer,
      schema: {
        params,
        body: CommentBody,
        response: { 201: z.object({ comment: Comment }), ...errors(401, 403, 404, 422, 429) },
      },
    },
    async (req, reply) => {
      const comment = await social.addComment(principal(req), req.params.id, req.body.text);
      return reply.code(201).send({ comment });
    },
  );
  api.delete(
    "/comment/:id",
    {
      config: auth.writer,
      schema: { params: IdParams("comment"), response: { 204: NoBody, ...errors(401, 403, 404) } },
    },
    async (req, reply) => {
      await social.deleteOwnComment(principal(req), req.params.id);
      return reply.code(204).send();
    },
  );
}
