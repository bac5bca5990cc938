import type { Clock } from "@app/kit/clock";
import type { Kysely } from "@app/kit/db";
import { tooManyRequests } from "@app/kit/errors";
import { createDbTickets } from "../auth/tickets.js";
import type { ExportKind, GalleryDB } from "../db/schema.js";

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

/** The database and clock download tickets live by. */
export interface DownloadTicketsDeps {
  db: Kysely<GalleryDB>;
  clock: Clock;
}

export type TicketStore = ReturnType<typeof createDownloadTickets>;

/** Download tickets in the database: issued by one process, redeemed once by any. */
export function createDownloadTickets(deps: DownloadTicketsDeps) {
  const store = createDbTickets({
    ...deps,
    purpose: "download",
    ttlMs: TICKET_TTL_MS,
    maxTotal: TICKET_CAP,
    maxPerSession: TICKETS_PER_SESSION,
  });

  /** Issue a ticket; at the cap new tickets are refused, never others evicted. */
  async function issue(t: Omit<DownloadTicket, "expiresAt">): Promise<{ ticket: string; expiresAt: number }> {
    const r = await store.issue(t);
    if (!r.ok)
      throw tooManyRequests(TICKET_TTL_MS / 1000, "Too many open download tickets; try again shortly.");
    return { ticket: r.ticket, expiresAt: r.expiresAt };
  }

  /** Take a ticket out (single use); null when unknown, expired or for another archive. */
  async function redeem(ticket: string, kind: ExportKind): Promise<DownloadTicket | null> {
    const t = await store.redeem(ticket);
    if (!t || t.kind !== kind) return null;
    return { kind, userId: t.userId, sessionId: t.sessionId, expiresAt: t.expiresAt };
  }

  /** Outstanding (unexpired) tickets of a user; they count towards the daily download limit. */
  function outstanding(userId: string): Promise<number> {
    return store.outstanding(userId);
  }

  return { issue, redeem, outstanding };
}
