import type { Dialect, Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** SQL of pre-moderation and of a guest's own list (issue 14). */
type Db = Kysely<GalleryDB>;

export interface PageKey {
  created_at: string;
  id: string;
}

const isoOf = (v: unknown) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());

/** Live pending uploads of users who are not banned or hidden, oldest first, after `after`. */
export async function pendingPage(db: Db, after: PageKey | null, limit: number): Promise<PageKey[]> {
  let q = db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select(["u.id", "u.created_at"])
    .where("u.approval", "=", "pending")
    .where("u.deleted_at", "is", null)
    .where("us.is_banned", "=", 0)
    .where("us.uploads_hidden_at", "is", null);
  if (after)
    q = q.where((eb) =>
      eb.or([
        eb("u.created_at", ">", after.created_at),
        eb.and([eb("u.created_at", "=", after.created_at), eb("u.id", ">", after.id)]),
      ]),
    );
  const rows = await q.orderBy("u.created_at").orderBy("u.id").limit(limit).execute();
  return rows.map((r) => ({ id: r.id, created_at: isoOf(r.created_at) }));
}

export async function countPending(db: Db): Promise<number> {
  const row = await db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("u.approval", "=", "pending")
    .where("u.deleted_at", "is", null)
    .where("us.is_banned", "=", 0)
    .where("us.uploads_hidden_at", "is", null)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The user's own live uploads, pending included, newest first, before `before`. */
export async function ownPage(
  db: Db,
  userId: string,
  before: PageKey | null,
  limit: number,
): Promise<PageKey[]> {
  let q = db
    .selectFrom("uploads as u")
    .select(["u.id", "u.created_at"])
    .where("u.user_id", "=", userId)
    .where("u.deleted_at", "is", null);
  if (before)
    q = q.where((eb) =>
      eb.or([
        eb("u.created_at", "<", before.created_at),
        eb.and([eb("u.created_at", "=", before.created_at), eb("u.id", "<", before.id)]),
      ]),
    );
  const rows = await q.orderBy("u.created_at", "desc").orderBy("u.id", "desc").limit(limit).execute();
  return rows.map((r) => ({ id: r.id, created_at: isoOf(r.created_at) }));
}

const liveUploadQuery = (db: Db, id: string) =>
  db
    .selectFrom("uploads")
    .select(["id", "user_id", "approval"])
    .where("id", "=", id)
    .where("deleted_at", "is", null);

/** The live (not soft-deleted) row and its approval state. */
export function liveUpload(db: Db, id: string) {
  return liveUploadQuery(db, id).executeTakeFirst();
}

/** The live row, locked for the approval decision until the caller's transaction ends. */
export function lockLiveUpload(trx: Db, dialect: Dialect, id: string) {
  return dialect.forUpdate(liveUploadQuery(trx, id)).executeTakeFirst();
}

export async function markApproved(trx: Db, id: string, now: string): Promise<void> {
  await trx
    .updateTable("uploads")
    .set({ approval: "approved", updated_at: now })
    .where("id", "=", id)
    .execute();
}

/**
 * Approves, in the caller's transaction, the live pending uploads among `ids` (or every one, for
 * null) of users who are not banned or hidden (what the host queue lists). Returns the approved
 * rows; ids that are unknown, removed or already approved are skipped.
 */
export async function approvePending(
  trx: Db,
  ids: readonly string[] | null,
  now: string,
): Promise<{ id: string; user_id: string }[]> {
  let q = trx
    .updateTable("uploads")
    .set({ approval: "approved", updated_at: now })
    .where("approval", "=", "pending")
    .where("deleted_at", "is", null)
    .where((eb) =>
      eb(
        "user_id",
        "in",
        eb.selectFrom("users").select("id").where("is_banned", "=", 0).where("uploads_hidden_at", "is", null),
      ),
    );
  if (ids !== null) q = q.where("id", "in", [...ids]);
  return q.returning(["id", "user_id"]).execute();
}

/** The approval state of an upload, or undefined for an unknown id. */
export async function approvalOf(db: Db, id: string): Promise<"approved" | "pending" | undefined> {
  const row = await db.selectFrom("uploads").select("approval").where("id", "=", id).executeTakeFirst();
  return row?.approval;
}
