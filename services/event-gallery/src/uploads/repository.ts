import type { Dialect, Kysely, Selectable } from "@app/kit/db";
import type { GalleryDB, UploadsTable } from "../db/schema.js";

/** Every SQL statement of the uploads capability. */
export type UploadRow = Selectable<UploadsTable>;
type Db = Kysely<GalleryDB>;

export async function findUpload(db: Db, id: string): Promise<UploadRow | undefined> {
  return db.selectFrom("uploads").selectAll().where("id", "=", id).executeTakeFirst();
}

/** The row, locked until the caller's transaction ends (an edit re-reads it under the lock). */
export function lockUploadRow(trx: Db, dialect: Dialect, id: string): Promise<UploadRow | undefined> {
  return dialect.forUpdate(trx.selectFrom("uploads").selectAll().where("id", "=", id)).executeTakeFirst();
}

/** The row that holds a client key: a live row, or one a host took down (the key stays claimed). */
export async function findByClientKey(db: Db, userId: string, key: string): Promise<UploadRow | undefined> {
  return db
    .selectFrom("uploads")
    .selectAll()
    .where("user_id", "=", userId)
    .where("client_upload_id", "=", key)
    .where((eb) => eb.or([eb("deleted_at", "is", null), eb("deleted_by", "=", "host")]))
    .orderBy("created_at", "desc")
    .executeTakeFirst();
}

export async function isUploadsLocked(db: Db): Promise<boolean> {
  const row = await db.selectFrom("event").select("uploads_locked_at").where("id", "=", 1).executeTakeFirst();
  return !!row?.uploads_locked_at;
}

/** Inside writeTx: the lock state under a share lock on the event row (a release waits for us). */
export async function isUploadsLockedForShare(trx: Db, dialect: Dialect): Promise<boolean> {
  const row = await dialect
    .forShare(trx.selectFrom("event").select("uploads_locked_at").where("id", "=", 1))
    .executeTakeFirst();
  return !!row?.uploads_locked_at;
}

/** Bytes already charged to the user; inside writeTx the row is locked so quota checks serialise per user. */
export async function userUploadBytes(db: Db, userId: string, dialect?: Dialect): Promise<number> {
  let q = db.selectFrom("users").select("total_upload_bytes").where("id", "=", userId);
  if (dialect) q = dialect.forUpdate(q);
  const row = await q.executeTakeFirst();
  return Number(row?.total_upload_bytes ?? 0);
}

/** Users with at least one non-deleted upload, counting `userId` whether or not it has one yet. */
export async function activeUploaders(db: Db, userId: string): Promise<number> {
  const row = await db
    .selectFrom("uploads")
    .select((eb) => eb.fn.count<number>("user_id").distinct().as("n"))
    .where("deleted_at", "is", null)
    .where("user_id", "!=", userId)
    .executeTakeFirst();
  return Number(row?.n ?? 0) + 1;
}

export interface NewUpload {
  id: string;
  user_id: string;
  client_upload_id: string | null;
  caption: string;
  media_type: "image" | "video";
  mime_type: string;
  original_path: string;
  original_size_bytes: number;
  created_at: string;
  /** Pre-moderation (issue 14); the column defaults to approved. */
  approval?: "approved" | "pending";
}

export async function insertUpload(trx: Db, row: NewUpload, tags: readonly string[]): Promise<void> {
  await trx
    .insertInto("uploads")
    .values({ ...row, compression_status: "processing", updated_at: row.created_at })
    .execute();
  await replaceTags(trx, row.id, tags);
  await trx
    .updateTable("users")
    .set((eb) => ({ total_upload_bytes: eb("total_upload_bytes", "+", row.original_size_bytes) }))
    .where("id", "=", row.user_id)
    .execute();
}

export async function tagsOf(db: Db, uploadId: string): Promise<string[]> {
  const rows = await db
    .selectFrom("upload_hashtags")
    .select("tag")
    .where("upload_id", "=", uploadId)
    .orderBy("tag")
    .execute();
  return rows.map((r) => r.tag);
}

export async function replaceTags(trx: Db, uploadId: string, tags: readonly string[]): Promise<void> {
  await trx.deleteFrom("upload_hashtags").where("upload_id", "=", uploadId).execute();
  if (tags.length > 0)
    await trx
      .insertInto("upload_hashtags")
      .values(tags.map((tag) => ({ upload_id: uploadId, tag })))
      .execute();
}

export async function updateCaption(trx: Db, uploadId: string, caption: string, now: string): Promise<void> {
  await trx.updateTable("uploads").set({ caption, updated_at: now }).where("id", "=", uploadId).execute();
}

export async function touchUpload(trx: Db, uploadId: string, now: string): Promise<void> {
  await trx.updateTable("uploads").set({ updated_at: now }).where("id", "=", uploadId).execute();
}

/**
 * Soft delete plus the quota refund (never below 0), in the caller's transaction. Returns false
 * when the row was already deleted (nothing changed, nothing refunded).
 */
export async function softDeleteAndRefund(
  trx: Db,
  upload: Pick<UploadRow, "id" | "user_id" | "original_size_bytes">,
  by: "owner" | "host" | "system",
  now: string,
): Promise<boolean> {
  const res = await trx
    .updateTable("uploads")
    .set({ deleted_at: now, deleted_by: by, updated_at: now })
    .where("id", "=", upload.id)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) return false;
  await refundQuota(trx, upload.user_id, upload.original_size_bytes);
  return true;
}

export async function refundQuota(trx: Db, userId: string, bytes: number): Promise<void> {
  await trx
    .updateTable("users")
    .set((eb) => ({
      total_upload_bytes: eb
        .case()
        .when("total_upload_bytes", ">", bytes)
        .then(eb("total_upload_bytes", "-", bytes))
        .else(0)
        .end(),
    }))
    .where("id", "=", userId)
    .execute();
}

// Resumable (tus) upload keys (migration 006).
export type ResumableRow = Selectable<GalleryDB["resumable_uploads"]>;
export type NewResumable = Omit<ResumableRow, "upload_id">;

export async function findResumable(db: Db, key: string): Promise<ResumableRow | undefined> {
  return db.selectFrom("resumable_uploads").selectAll().where("key", "=", key).executeTakeFirst();
}

export async function findResumableByClientKey(
  db: Db,
  userId: string,
  clientKey: string,
): Promise<ResumableRow | undefined> {
  return db
    .selectFrom("resumable_uploads")
    .selectAll()
    .where("user_id", "=", userId)
    .where("client_upload_id", "=", clientKey)
    .executeTakeFirst();
}

export async function insertResumable(trx: Db, row: NewResumable): Promise<void> {
  await trx.insertInto("resumable_uploads").values(row).execute();
}

export async function deleteResumable(db: Db, key: string): Promise<void> {
  await db.deleteFrom("resumable_uploads").where("key", "=", key).execute();
}

export async function markResumableDone(trx: Db, key: string, uploadId: string): Promise<void> {
  await trx.updateTable("resumable_uploads").set({ upload_id: uploadId }).where("key", "=", key).execute();
}

/** Unfinished keys whose time is up (a finished key stays: it replays its upload). */
export async function expiredResumables(db: Db, nowMs: number, limit: number): Promise<ResumableRow[]> {
  return db
    .selectFrom("resumable_uploads")
    .selectAll()
    .where("upload_id", "is", null)
    .where("expires_at", "<=", nowMs)
    .orderBy("expires_at")
    .limit(limit)
    .execute();
}

/** Every key still alive (the start-up sweep keeps their partial files). */
export async function liveResumableKeys(db: Db): Promise<Set<string>> {
  const rows = await db
    .selectFrom("resumable_uploads")
    .select("key")
    .where("upload_id", "is", null)
    .execute();
  return new Set(rows.map((r) => r.key));
}
