import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import type { IdentityService } from "../../identity/service.js";
import { auth, principal } from "../route-auth.js";
import { Joined, Session } from "../schemas.js";

// `name` is checked by the shared name rules (422 invalid_name / reserved_name), not here.
const JoinBody = z.strictObject({
  name: z.unknown(),
  client_join_id: z.string().min(1).max(128).optional(),
});
const RecoverBody = z.strictObject({ name: z.unknown(), pin: z.string().max(32) });
const RequestBody = z.strictObject({ name: z.unknown() });
const AdminLoginBody = z.strictObject({ password: z.string().max(1024) });

/** POST /join, /recover, /recover/request, /admin/login; DELETE /session. */
export function registerIdentityRoutes(app: FastifyInstance, ctx: GalleryContext, identity: IdentityService) {
  const api = typed(app);
  api.post(
    "/join",
    { schema: { body: JoinBody, response: { 201: Joined, 200: Joined, ...errors(409, 422, 429) } } },
    async (req, reply) => {
      const r = await identity.join(ctx.auth.clientIp(req), req.body);
      return reply.code(r.resumed ? 200 : 201).send({ token: r.token, pin: r.pin, user: r.user });
    },
  );

  api.post(
    "/recover",
    { schema: { body: RecoverBody, response: { 200: Session, ...errors(401, 422, 429) } } },
    async (req) => identity.recover(ctx.auth.clientIp(req), req.body),
  );

  api.post(
    "/recover/request",
    { schema: { body: RequestBody, response: { 204: NoBody, ...errors(422, 429) } } },
    async (req, reply) => {
      await identity.requestPinReset(ctx.auth.clientIp(req), req.body);
      return reply.code(204).send();
    },
  );

  api.post(
    "/admin/login",
    { schema: { body: AdminLoginBody, response: { 200: Session, ...errors(401, 422, 429) } } },
    async (req) => identity.adminLogin(ctx.auth.clientIp(req), req.body.password),
  );

  api.delete(
    "/session",
    { config: auth.user, schema: { response: { 204: NoBody, ...errors(401) } } },
    async (req, reply) => {
      await identity.logout(principal(req).sessionId);
      return reply.code(204).send();
    },
  );
}
