import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { listAudit } from "../../audit/audit.js";
import type { AuthedUser, GalleryContext } from "../../context.js";
import type { ModerationService } from "../../moderation/service.js";
import { auth, principal } from "../route-auth.js";
import { AuditEntry, HostUser, User } from "../schemas.js";
import { IdParams } from "./social.js";

const AuditQuery = z.object({
  limit: z.coerce.number().int().optional(),
  cursor: z.string().max(512).optional(),
});

/** Host moderation routes (hosts and the admin). */
export function registerHostRoutes(app: FastifyInstance, ctx: GalleryContext, moderation: ModerationService) {
  const api = typed(app);
  const userAction = (action: string, run: (actor: AuthedUser, id: string) => Promise<User>) =>
    api.post(
      `/host/users/:id/${action}`,
      {
        config: auth.hostWrite,
        schema: {
          params: IdParams("user"),
          response: { 200: z.object({ user: User }), ...errors(401, 403, 404, 409) },
        },
      },
      async (req) => ({ user: await run(principal(req), req.params.id) }),
    );

  api.get(
    "/host/users",
    {
      config: auth.host,
      schema: { response: { 200: z.object({ users: z.array(HostUser) }), ...errors(401, 403) } },
    },
    async () => ({ users: await moderation.listUsers() }),
  );
  userAction("ban", (actor, id) => moderation.setBanned(actor, id, true));
  userAction("unban", (actor, id) => moderation.setBanned(actor, id, false));
  userAction("promote", (actor, id) => moderation.setRole(actor, id, "host"));
  userAction("demote", (actor, id) => moderation.setRole(actor, id, "guest"));
  api.post(
    "/host/users/:id/reset-pin",
    {
      config: auth.hostWrite,
      schema: {
        params: IdParams("user"),
        response: { 200: z.object({ pin: z.string() }), ...errors(401, 403, 404) },
      },
    },
    async (req) => ({ pin: await moderation.resetPin(principal(req), req.params.id) }),
  );
  api.delete(
    "/host/upload/:id",
    {
      config: auth.hostWrite,
      schema: { params: IdParams(), response: { 204: NoBody, ...errors(401, 403, 404) } },
    },
    async (req, reply) => {
      await moderation.takedownUpload(principal(req), req.params.id);
      return reply.code(204).send();
    },
  );
  api.delete(
    "/host/comment/:id",
    {
      config: auth.hostWrite,
      schema: { params: IdParams("comment"), response: { 204: NoBody, ...errors(401, 403, 404) } },
    },
    async (req, reply) => {
      await moderation.removeComment(principal(req), req.params.id);
      return reply.code(204).send();
    },
  );
  api.get(
    "/host/audit",
    {
      config: auth.host,
      schema: {
        querystring: AuditQuery,
        response: {
          200: z.object({ entries: z.array(AuditEntry), next_cursor: z.string().nullable() }),
          ...errors(401, 403, 422),
        },
      },
    },
    async (req) => {
      const limit = Math.min(100, Math.max(1, req.query.limit ?? 50));
      return listAudit(ctx.database.db, { limit, cursor: req.query.cursor });
    },
  );
}
