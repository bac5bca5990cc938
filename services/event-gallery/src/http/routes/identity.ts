import { parseInput } from "@app/kit/validate";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import type { IdentityService } from "../../identity/service.js";

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
  app.post("/join", async (req, reply) => {
    const body = parseInput(JoinBody, req.body ?? {});
    const r = await identity.join(ctx.auth.clientIp(req), body);
    return reply.code(r.resumed ? 200 : 201).send({ token: r.token, pin: r.pin, user: r.user });
  });

  app.post("/recover", async (req) => {
    const body = parseInput(RecoverBody, req.body ?? {});
    return identity.recover(ctx.auth.clientIp(req), body);
  });

  app.post("/recover/request", async (req, reply) => {
    const body = parseInput(RequestBody, req.body ?? {});
    await identity.requestPinReset(ctx.auth.clientIp(req), body);
    return reply.code(204).send();
  });

  app.post("/admin/login", async (req) => {
    const body = parseInput(AdminLoginBody, req.body ?? {});
    return identity.adminLogin(ctx.auth.clientIp(req), body.password);
  });

  app.delete("/session", async (req, reply) => {
    const user = await ctx.auth.requireUser(req);
    await identity.logout(user.sessionId);
    return reply.code(204).send();
  });
}
