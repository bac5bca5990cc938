import type { RouteModule } from "../../context.js";
import { acceptInboundEmail } from "../../email/inbound.js";

/** A webhook message larger than this is refused with 413. */
const EMAIL_BODY_LIMIT = 10 * 1024 * 1024;

/**
 * POST /api/v1/email-inbound/{app_id}/{trigger_id} (public). The HMAC signature covers the raw
 * body, so this route's scope parses every content type as a Buffer and decodes JSON itself.
 */
export const emailRoutes: RouteModule = async (app, ctx) => {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: EMAIL_BODY_LIMIT }, (_req, body, done) =>
      done(null, body),
    );
    scope.post<{ Params: { app: string; trigger: string } }>(
      "/api/v1/email-inbound/:app/:trigger",
      { bodyLimit: EMAIL_BODY_LIMIT },
      async (req, reply) => {
        const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const sig = req.headers["x-signature"];
        const res = await acceptInboundEmail(
          { database: ctx.database, clock: ctx.clock, secretBox: ctx.secretBox },
          req.params.app,
          req.params.trigger,
          raw,
          Array.isArray(sig) ? sig[0] : sig,
        );
        return reply.code(202).send({ accepted: true, id: res.outbox_id });
      },
    );
  });
};
