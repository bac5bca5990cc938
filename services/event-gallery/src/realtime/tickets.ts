import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Kysely } from "@app/kit/db";
import { tooManyRequests } from "@app/kit/errors";
import { DbTickets } from "../auth/tickets.js";
import type { GalleryDB } from "../db/schema.js";

export const TICKET_TTL_MS = 30_000;

/**
 * Short-lived, single-use tickets that open an SSE stream (EventSource cannot send headers), kept
 * in the database so any process can redeem a ticket another issued. Bounded in total and per
 * session; expired tickets are pruned on every issue, and at capacity new tickets are refused
 * (never evicting someone else's).
 */
export class TicketStore {
  private readonly store: DbTickets;

  constructor(
    db: Kysely<GalleryDB>,
    clock: Clock,
    opts: { maxTotal: number; maxPerSession: number; ttlMs?: number } = {
      maxTotal: 10_000,
      maxPerSession: 5,
    },
  ) {
    this.store = new DbTickets(db, clock, "stream", {
      ttlMs: opts.ttlMs ?? TICKET_TTL_MS,
      maxTotal: opts.maxTotal,
      maxPerSession: opts.maxPerSession,
    });
  }

  async issue(userId: string, sessionId: string): Promise<{ ticket: string; expires_at: string }> {
    const r = await this.store.issue({ userId, sessionId });
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
  async redeem(ticket: string): Promise<{ userId: string; sessionId: string } | null> {
    const t = await this.store.redeem(ticket);
    return t && { userId: t.userId, sessionId: t.sessionId };
  }
}
