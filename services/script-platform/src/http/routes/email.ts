import { errors, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModuleWith } from "../../context.js";
import type { OutboxWriter } from "../../dispatch/enqueue.js";
import { acceptInboundEmail } from "../../email/inbound.js";

/** A webhook message larger than this is refused with 413. */
const EMAIL_BODY_LIMIT = 10 * 1024 * 1024;

/**
 * POST /api/v1/email-inbound/{app_id}/{trigger_id} (public). The HMAC signature covers the raw
 * body, so this route's scope parses every content type as a Buffer and decodes JSON itself.
 */
export const emailRoutes: RouteModuleWith<{ outbox: OutboxWriter }> = async (app, ctx, deps) => {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: EMAIL_BODY_LIMIT }, (_req, body, done) =>
      done(null, body),
    );
    typed(scope).post(
      "/api/v1/email-inbound/:app/:trigger",
      {
        bodyLimit: EMAIL_BODY_LIMIT,
        schema: {
          description:
            "Email webhook: JSON `{from, to, cc, subject, text, html, received_at, message_id}`; with an inbound secret, `X-Signature: sha256=<hex HMAC-SHA256 of the raw body>`. The raw body is checked here, so no body schema.",
          params: z.object({ app: z.string(), trigger: z.string() }),
          response: {
            202: z.object({ accepted: z.literal(true), id: z.string() }),
            ...errors(400, 401, 404, 413, 422),
          },
        },
      },
      async (req, reply) => {
        const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
        const sig = req.headers["x-signature"];
        const res = await acceptInboundEmail(
          { database: ctx.database, clock: ctx.clock, secretBox: ctx.secretBox, outbox: deps.outbox },
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
