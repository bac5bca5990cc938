import { randomBytes } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import { tooManyRequests } from "@app/kit/errors";

export const TICKET_TTL_MS = 30_000;

interface Entry {
  userId: string;
  sessionId: string;
  expiresAt: number;
}

/**
 * Short-lived, single-use tickets that open an SSE stream (EventSource cannot send headers).
 * Bounded in total and per session; expired tickets are pruned on every issue, and at capacity
 * new tickets are refused (never evicting someone else's).
 */
export class TicketStore {
  private readonly tickets = new Map<string, Entry>();

  constructor(
    private readonly clock: Clock,
    private readonly opts: { maxTotal: number; maxPerSession: number; ttlMs?: number } = {
      maxTotal: 10_000,
      maxPerSession: 5,
    },
  ) {}

  private get ttl() {
    return this.opts.ttlMs ?? TICKET_TTL_MS;
  }

  issue(userId: string, sessionId: string): { ticket: string; expires_at: string } {
    const now = this.clock.now();
    let earliest = Number.POSITIVE_INFINITY;
    let mine = 0;
    let myEarliest = Number.POSITIVE_INFINITY;
    for (const [t, e] of this.tickets) {
      if (e.expiresAt <= now) {
        this.tickets.delete(t);
        continue;
      }
      earliest = Math.min(earliest, e.expiresAt);
      if (e.sessionId === sessionId) {
        mine++;
        myEarliest = Math.min(myEarliest, e.expiresAt);
      }
    }
    if (this.tickets.size >= this.opts.maxTotal)
      throw tooManyRequests(
        (earliest - now) / 1000,
        "Too many pending stream tickets; try again shortly.",
        "ticket_store_full",
      );
    if (mine >= this.opts.maxPerSession)
      throw tooManyRequests(
        (myEarliest - now) / 1000,
        "Too many pending stream tickets for this session.",
        "ticket_store_full",
      );
    const ticket = randomBytes(24).toString("base64url");
    const expiresAt = now + this.ttl;
    this.tickets.set(ticket, { userId, sessionId, expiresAt });
    return { ticket, expires_at: toIso(expiresAt) };
  }

  /** Single use: a ticket is gone once redeemed, valid or not. */
  redeem(ticket: string): { userId: string; sessionId: string } | null {
    const e = this.tickets.get(ticket);
    if (!e) return null;
    this.tickets.delete(ticket);
    return e.expiresAt > this.clock.now() ? { userId: e.userId, sessionId: e.sessionId } : null;
  }

  size(): number {
    return this.tickets.size;
  }
}
