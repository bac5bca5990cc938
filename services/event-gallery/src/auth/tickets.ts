import { createHash, randomBytes } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import type { Kysely } from "@app/kit/db";
import type { GalleryDB, TicketsTable } from "../db/schema.js";
import {
  insertTicket,
  outstandingTickets,
  pruneTickets,
  takeTicket,
  ticketCounts,
} from "./tickets-repository.js";

export interface RedeemedTicket {
  userId: string;
  sessionId: string;
  kind: string | null;
  expiresAt: number;
}

export type IssueResult =
  | { ok: true; ticket: string; expiresAt: number }
  | { ok: false; full: "total" | "session"; retryMs: number };

/** Where tickets live and their bounds. */
export interface DbTicketsDeps {
  db: Kysely<GalleryDB>;
  clock: Clock;
  purpose: TicketsTable["purpose"];
  ttlMs: number;
  maxTotal: number;
  maxPerSession: number;
}

export type DbTickets = ReturnType<typeof createDbTickets>;

/**
 * Short-lived single-use tickets kept in the database, so a ticket issued by one process is
 * redeemed by any other, exactly once (the DELETE that removes it decides). Only the SHA-256 of a
 * ticket is stored. Bounded in total and per session; expired tickets are pruned on every issue,
 * and at a bound new tickets are refused, never someone else's evicted.
 */
export function createDbTickets(deps: DbTicketsDeps) {
  const { db, clock, purpose } = deps;

  async function issue(t: { userId: string; sessionId: string; kind?: string }): Promise<IssueResult> {
    const now = clock.now();
    await pruneTickets(db, purpose, now);
    const c = await ticketCounts(db, purpose, t.sessionId, now);
    if (c.total >= deps.maxTotal) return { ok: false, full: "total", retryMs: (c.earliest ?? now) - now };
    if (c.mine >= deps.maxPerSession)
      return { ok: false, full: "session", retryMs: (c.myEarliest ?? now) - now };
    const ticket = randomBytes(24).toString("base64url");
    const expiresAt = now + deps.ttlMs;
    await insertTicket(db, {
      ticket_hash: hashTicket(ticket),
      purpose: purpose,
      kind: t.kind ?? null,
      user_id: t.userId,
      session_id: t.sessionId,
      expires_at: expiresAt,
    });
    return { ok: true, ticket, expiresAt };
  }

  /** Single use: the ticket is gone once presented, valid or not; null when unknown or expired. */
  async function redeem(ticket: string): Promise<RedeemedTicket | null> {
    if (ticket.length === 0 || ticket.length > 200) return null;
    const row = await takeTicket(db, purpose, hashTicket(ticket));
    if (!row || Number(row.expires_at) <= clock.now()) return null;
    return {
      userId: row.user_id,
      sessionId: row.session_id,
      kind: row.kind,
      expiresAt: Number(row.expires_at),
    };
  }

  function outstanding(userId: string): Promise<number> {
    return outstandingTickets(db, purpose, userId, clock.now());
  }

  return { issue, redeem, outstanding };
}

const hashTicket = (t: string) => createHash("sha256").update(t, "utf8").digest("hex");
