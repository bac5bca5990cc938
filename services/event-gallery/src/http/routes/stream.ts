import { unauthorized } from "@app/kit/errors";
import { openSse } from "@app/kit/http";
import { binary, errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { SessionTokens } from "../../auth/sessions.js";
import type { GalleryContext } from "../../context.js";
import type { StreamHub } from "../../realtime/hub.js";
import type { TicketStore } from "../../realtime/tickets.js";
import { auth, principal } from "../route-auth.js";
import { Ticket } from "../schemas.js";

export const STREAM_TICKETS_PER_MIN = 30;
export const HEARTBEAT_MS = 25_000;

/** POST /stream/ticket, GET /stream?ticket=… (server-sent events). */
export function registerStreamRoutes(
  app: FastifyInstance,
  ctx: GalleryContext,
  deps: { tickets: TicketStore; hub: StreamHub; tokens: SessionTokens },
) {
  const api = typed(app);
  api.post(
    "/stream/ticket",
    { config: auth.user, schema: { response: { 201: Ticket, ...errors(401, 429) } } },
    async (req, reply) => {
      const user = principal(req);
      await ctx.limiter.hit(`stream-ticket:${user.id}`, STREAM_TICKETS_PER_MIN, 60_000);
      return reply.code(201).send(await deps.tickets.issue(user.id, user.sessionId));
    },
  );

  api.get(
    "/stream",
    {
      schema: {
        // A missing or repeated ticket is no ticket: 401 invalid_ticket below.
        querystring: z.object({ ticket: z.string().optional().catch(undefined) }),
        response: {
          200: binary("text/event-stream", "Server-sent events (contracts: Real-time)"),
          ...errors(401, 503),
        },
      },
    },
    async (req, reply) => {
      const ticket = req.query.ticket;
      const redeemed = ticket !== undefined ? await deps.tickets.redeem(ticket) : null;
      // The session behind the ticket must still be live (logout or idle expiry ends it).
      const live = redeemed
        ? await deps.tokens.lookup(ctx.database.db, { sessionId: redeemed.sessionId })
        : null;
      if (!redeemed || !live || live.id !== redeemed.userId)
        throw unauthorized("The stream ticket is invalid or expired.", "invalid_ticket");
      deps.hub.assertCapacity();
      const stream = openSse(reply, { clock: ctx.clock, heartbeatMs: HEARTBEAT_MS });
      deps.hub.add(live.id, stream);
    },
  );
}
