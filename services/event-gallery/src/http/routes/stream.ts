import { unauthorized } from "@app/kit/errors";
import { openSse } from "@app/kit/http";
import type { FastifyInstance } from "fastify";
import type { SessionTokens } from "../../auth/sessions.js";
import type { GalleryContext } from "../../context.js";
import type { StreamHub } from "../../realtime/hub.js";
import type { TicketStore } from "../../realtime/tickets.js";

export const STREAM_TICKETS_PER_MIN = 30;
export const HEARTBEAT_MS = 25_000;

/** POST /stream/ticket, GET /stream?ticket=… (server-sent events). */
export function registerStreamRoutes(
  app: FastifyInstance,
  ctx: GalleryContext,
  deps: { tickets: TicketStore; hub: StreamHub; tokens: SessionTokens },
) {
  app.post("/stream/ticket", async (req, reply) => {
    const user = await ctx.auth.requireUser(req);
    await ctx.limiter.hit(`stream-ticket:${user.id}`, STREAM_TICKETS_PER_MIN, 60_000);
    return reply.code(201).send(await deps.tickets.issue(user.id, user.sessionId));
  });

  app.get("/stream", async (req, reply) => {
    const ticket = (req.query as Record<string, unknown>).ticket;
    const redeemed = typeof ticket === "string" ? await deps.tickets.redeem(ticket) : null;
    // The session behind the ticket must still be live (logout or idle expiry ends it).
    const live = redeemed
      ? await deps.tokens.lookup(ctx.database.db, { sessionId: redeemed.sessionId })
      : null;
    if (!redeemed || !live || live.id !== redeemed.userId)
      throw unauthorized("The stream ticket is invalid or expired.", "invalid_ticket");
    deps.hub.assertCapacity();
    const stream = openSse(reply, { clock: ctx.clock, heartbeatMs: HEARTBEAT_MS });
    deps.hub.add(live.id, stream);
  });
}
