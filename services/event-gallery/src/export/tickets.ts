import { randomBytes } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import { tooManyRequests } from "@app/kit/errors";
import type { ExportKind } from "../db/schema.js";

/** Download tickets: 60 s, single use, bound to the session that asked for them. */
export const TICKET_TTL_MS = 60_000;
export const TICKET_CAP = 2_000;
export const TICKETS_PER_SESSION = 4;

export interface DownloadTicket {
  kind: ExportKind;
  userId: string;
  sessionId: string;
  expiresAt: number;
}

export class TicketStore {
  private readonly tickets = new Map<string, DownloadTicket>();

  constructor(private readonly clock: Clock) {}

  /** Issue a ticket; at the cap new tickets are refused, never others evicted. */
  issue(t: Omit<DownloadTicket, "expiresAt">): { ticket: string; expiresAt: number } {
    this.prune();
    const mine = [...this.tickets.values()].filter((x) => x.sessionId === t.sessionId).length;
    if (this.tickets.size >= TICKET_CAP || mine >= TICKETS_PER_SESSION)
      throw tooManyRequests(TICKET_TTL_MS / 1000, "Too many open download tickets; try again shortly.");
    const ticket = randomBytes(24).toString("base64url");
    const expiresAt = this.clock.now() + TICKET_TTL_MS;
    this.tickets.set(ticket, { ...t, expiresAt });
    return { ticket, expiresAt };
  }

  /** Take a ticket out (single use); null when unknown, expired or for another archive. */
  redeem(ticket: string, kind: ExportKind): DownloadTicket | null {
    const t = this.tickets.get(ticket);
    if (!t) return null;
    this.tickets.delete(ticket);
    if (t.expiresAt <= this.clock.now() || t.kind !== kind) return null;
    return t;
  }

  /** Outstanding (unexpired) tickets of a user; they count towards the daily download limit. */
  outstanding(userId: string): number {
    const now = this.clock.now();
    let n = 0;
    for (const t of this.tickets.values()) if (t.userId === userId && t.expiresAt > now) n++;
    return n;
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [k, t] of this.tickets) if (t.expiresAt <= now) this.tickets.delete(k);
  }
}
