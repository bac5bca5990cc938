import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Kysely } from "@app/kit/db";
import { tooManyRequests } from "@app/kit/errors";
import { createDbTickets } from "../auth/tickets.js";
import type { GalleryDB } from "../db/schema.js";

export const TICKET_TTL_MS = 30_000;

/** The database and clock stream tickets live by, and their bounds (defaults: 10,000 in total, 5 per session, TICKET_TTL_MS). */
export interface StreamTicketsDeps {
  db: Kysely<GalleryDB>;
  clock: Clock;
  maxTotal?: number;
  maxPerSession?: number;
  ttlMs?: number;
}

export type TicketStore = ReturnType<typeof createStreamTickets>;

/**
 * Short-lived, single-use tickets that open an SSE stream (EventSource cannot send headers), kept
 * in the database so any process can redeem a ticket another issued. Bounded in total and per
 * session; expired tickets are pruned on every issue, and at capacity new tickets are refused
 * (never evicting someone else's).
 */
export function createStreamTickets(deps: StreamTicketsDeps) {
  const store = createDbTickets({
    db: deps.db,
    clock: deps.clock,
    purpose: "stream",
    ttlMs: deps.ttlMs ?? TICKET_TTL_MS,
    maxTotal: deps.maxTotal ?? 10_000,
    maxPerSession: deps.maxPerSession ?? 5,
  });

  async function issue(userId: string, sessionId: string): Promise<{ ticket: string; expires_at: string }> {
    const r = await store.issue({ userId, sessionId });
    if (!r.ok)
      throw tooManyRequests(
        r.retryMs / 1000,
        r.full === "total"
          ? "Too many pending stream tickets; try again shortly."
          : "Too many pending stream tickets for this session.",
        "ticket_store_full",
      );
    return { ticket: r.ticket, expires_at: toIso(r.expiresAt) };
  }

  /** Single use: a ticket is gone once redeemed, valid or not. */
  async function redeem(ticket: string): Promise<{ userId: string; sessionId: string } | null> {
    const t = await store.redeem(ticket);
    return t && { userId: t.userId, sessionId: t.sessionId };
  }

  return { issue, redeem };
}
