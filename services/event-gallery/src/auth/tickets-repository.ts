import { type Kysely, sql } from "@app/kit/db";
import type { GalleryDB, TicketsTable } from "../db/schema.js";

/** Every SQL statement of single-use tickets (stream and download), shared by all processes. */
type Db = Kysely<GalleryDB>;
type Purpose = TicketsTable["purpose"];

export async function pruneTickets(db: Db, purpose: Purpose, now: number): Promise<void> {
  await db.deleteFrom("tickets").where("purpose", "=", purpose).where("expires_at", "<=", now).execute();
}

/** Live tickets in total and of one session, with the earliest expiry of each. */
export async function ticketCounts(db: Db, purpose: Purpose, sessionId: string, now: number) {
  const row = await db
    .selectFrom("tickets")
    .select([
      sql<number>`count(*)`.as("total"),
      sql<number | null>`min(expires_at)`.as("earliest"),
      sql<number>`sum(CASE WHEN session_id = ${sessionId} THEN 1 ELSE 0 END)`.as("mine"),
      sql<number | null>`min(CASE WHEN session_id = ${sessionId} THEN expires_at END)`.as("my_earliest"),
    ])
    .where("purpose", "=", purpose)
    .where("expires_at", ">", now)
    .executeTakeFirstOrThrow();
  const n = (v: unknown) => (v === null || v === undefined ? null : Number(v));
  return {
    total: n(row.total) ?? 0,
    earliest: n(row.earliest),
    mine: n(row.mine) ?? 0,
    myEarliest: n(row.my_earliest),
  };
}

export async function insertTicket(db: Db, row: TicketsTable): Promise<void> {
  await db.insertInto("tickets").values(row).execute();
}

/** Remove the ticket and return it: whichever process deletes the row is the one that redeems it. */
export function takeTicket(db: Db, purpose: Purpose, ticketHash: string) {
  return db
    .deleteFrom("tickets")
    .where("ticket_hash", "=", ticketHash)
    .where("purpose", "=", purpose)
    .returning(["user_id", "session_id", "kind", "expires_at"])
    .executeTakeFirst();
}

export async function outstandingTickets(db: Db, purpose: Purpose, userId: string, now: number) {
  const row = await db
    .selectFrom("tickets")
    .select(sql<number>`count(*)`.as("n"))
    .where("purpose", "=", purpose)
    .where("user_id", "=", userId)
    .where("expires_at", ">", now)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
