import { notFound, unauthorized } from "@app/kit/errors";
import { openSse, presentedCredentials, type SseStream } from "@app/kit/http";
import { binary, errors, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModuleWith } from "../../context.js";
import type { RealtimeHub } from "../../realtime/hub.js";
import { findTopic } from "../../realtime/topics.js";
import { verifySubscriberToken } from "../../sdk/pubsub.js";

/**
 * GET /api/v1/realtime/topics/{topic}: server-sent events of the topic's publishDurable
 * messages (`event: message`, `id: <seq>`, `data: <message JSON>`). The Host header selects the
 * app; an unknown or internal topic is 404; an external topic needs a subscriber token as
 * `?token=` (EventSource cannot send headers) or a bearer header, else 401.
 */
/**
 * Expiry of a subscriber token already verified by verifySubscriberToken (sdk/pubsub.ts format:
 * `<base64url {a, t, e: epoch seconds}>.<mac>`), in epoch milliseconds.
 */
function tokenExpiryMs(token: string): number {
  const claims = JSON.parse(Buffer.from(token.split(".")[0] ?? "", "base64url").toString("utf8")) as {
    e: number;
  };
  return claims.e * 1000;
}

export const realtimeRoutes: RouteModuleWith<{ hub: RealtimeHub }> = (app, ctx, deps) => {
  typed(app).get(
    "/api/v1/realtime/topics/:topic",
    {
      schema: {
        params: z.object({ topic: z.string() }),
        // A repeated or missing ?token= is no token (the bearer header is tried then).
        querystring: z.object({ token: z.string().optional().catch(undefined) }),
        response: {
          200: binary(
            "text/event-stream",
            "Server-sent events: `event: message`, `id: <seq>`, `data: <message JSON>`",
          ),
          ...errors(401, 404, 503),
        },
      },
    },
    async (req, reply) => {
      const appId = ctx.routeTable.resolveHost(req.headers.host ?? "");
      if (!appId) throw notFound("No app serves this host.", "app_not_found");
      const topic = await findTopic(ctx, appId, req.params.topic);
      if (!topic?.external) throw notFound("Unknown topic.", "topic_not_found");
      const token = req.query.token ?? presentedCredentials(req.headers)[0];
      if (!(await verifySubscriberToken(ctx, appId, topic.name, token)))
        throw unauthorized(
          "A valid subscriber token for this topic is required.",
          "invalid_subscriber_token",
        );
      let stream: SseStream | null = null;
      // Subscribe before the stream opens: at the subscriber cap the answer is still a plain 503.
      const unsubscribe = await deps.hub.subscribe(appId, topic.name, (seq, json) => {
        stream?.send("message", json, String(seq));
      });
      stream = openSse(reply, { clock: ctx.clock });
      const open = stream;
      // The token's lifetime bounds the stream: at expiry the client must come back with a new one.
      const expiry = ctx.clock.setTimeout(
        () => open.close(),
        Math.max(0, tokenExpiryMs(token ?? "") - ctx.clock.now()),
      );
      open.onClose(() => {
        expiry.cancel();
        unsubscribe();
      });
    },
  );
};
