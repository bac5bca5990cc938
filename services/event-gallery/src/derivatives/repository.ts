import type { Dialect, ExpressionBuilder, Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** Every SQL statement of the derivative worker, backfill and reclaim jobs. */
type Db = Kysely<GalleryDB>;

export interface Job {
  id: string;
  user_id: string;
  media_type: "image" | "video";
  mime_type: string;
  original_path: string | null;
  original_size_bytes: number;
  derivative_attempts: number;
}

const JOB_COLUMNS = [
  "id",
  "user_id",
  "media_type",
  "mime_type",
  "original_path",
  "original_size_bytes",
  "derivative_attempts",
] as const;

/** Rows no worker holds: never claimed, or the claimer's lease has lapsed (it died mid-render). */
const unleased = (nowMs: number) => (eb: ExpressionBuilder<GalleryDB, "uploads">) =>
  eb.or([eb("derivative_lease_until", "is", null), eb("derivative_lease_until", "<=", nowMs)]);

/**
 * Claim the next processing upload: the attempt counter is incremented before the work starts
 * (write-ahead), so a crash mid-render still counts as an attempt, and the row is leased to the
 * claimer until `leaseUntil`, so no other lane or process renders it meanwhile.
 */
export async function claimNext(
  trx: Db,
  dialect: Dialect,
  maxAttempts: number,
  lease: { nowMs: number; until: number },
): Promise<Job | undefined> {
  const q = trx
    .selectFrom("uploads")
    .select(JOB_COLUMNS)
    .where("compression_status", "=", "processing")
    .where("deleted_at", "is", null)
    .where("derivative_attempts", "<", maxAttempts)
    .where(unleased(lease.nowMs));
  const row = await dialect
    .forUpdateSkipLocked(q.orderBy("derivative_attempts").orderBy("created_at").limit(1))
    .executeTakeFirst();
  if (!row) return undefined;
  // Compare-and-set on the counter and the lease: a claimer that lost a race updates nothing.
  const res = await trx
    .updateTable("uploads")
    .set({ derivative_attempts: row.derivative_attempts + 1, derivative_lease_until: lease.until })
    .where("id", "=", row.id)
    .where("derivative_attempts", "=", row.derivative_attempts)
    .where(unleased(lease.nowMs))
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) === 0) return undefined;
  return { ...row, derivative_attempts: row.derivative_attempts + 1 };
}

/**
 * Processing rows whose attempts ran out and whose last claimer is gone (e.g. the process died
 * during the last attempt): a row still leased may be another process's live attempt.
 */
export async function exhausted(db: Db, maxAttempts: number, nowMs: number, limit: number): Promise<Job[]> {
  return db
    .selectFrom("uploads")
    .select(JOB_COLUMNS)
    .where("compression_status", "=", "processing")
    .where("deleted_at", "is", null)
    .where("derivative_attempts", ">=", maxAttempts)
    .where(unleased(nowMs))
    .limit(limit)
    .execute();
}

export interface DerivativeOutcome {
  width: number;
  height: number;
  duration_s: number | null;
  preview_path: string | null;
  display_path: string | null;
  thumbnail_path: string;
  rev: number;
}

export async function markDone(trx: Db, id: string, o: DerivativeOutcome, now: string): Promise<void> {
  await trx
    .updateTable("uploads")
    .set({
      width: o.width,
      height: o.height,
      duration_s: o.duration_s,
      preview_path: o.preview_path,
      display_path: o.display_path,
      thumbnail_path: o.thumbnail_path,
      compression_status: "done",
      derivatives_rev: o.rev,
      derivative_attempts: 0,
      derivative_boots: 0,
      derivative_last_error: null,
      derivative_lease_until: null,
      updated_at: now,
    })
    .where("id", "=", id)
    .execute();
}

/**
 * Thumbnails first: the row of an upload still processing points at its thumbnail (and knows its
 * size) while preview and display are encoded. False when the row is no longer processing (removed
 * meanwhile).
 */
export async function markThumbnail(
  trx: Db,
  id: string,
  t: { thumbnail_path: string; width: number; height: number },
  now: string,
): Promise<boolean> {
  const res = await trx
    .updateTable("uploads")
    .set({ thumbnail_path: t.thumbnail_path, width: t.width, height: t.height, updated_at: now })
    .where("id", "=", id)
    .where("compression_status", "=", "processing")
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** A failed attempt releases its lease, so the next attempt (on any worker) may start at once. */
export async function recordError(trx: Db, id: string, message: string | null): Promise<void> {
  await trx
    .updateTable("uploads")
    .set(
      message === null
        ? { derivative_lease_until: null }
        : { derivative_last_error: message, derivative_lease_until: null },
    )
    .where("id", "=", id)
    .execute();
}

export async function markFailed(trx: Db, id: string, now: string): Promise<void> {
  await trx
    .updateTable("uploads")
    .set({ compression_status: "failed", derivative_lease_until: null, updated_at: now })
    .where("id", "=", id)
    .execute();
}

/**
 * Rows rendered by an older pipeline that have not yet given up (≤ 3 boots). Rows tried on fewer
 * boots come first, so a stuck batch cannot starve the rest.
 */
export async function staleRows(db: Db, rev: number, maxBoots: number, limit: number): Promise<Job[]> {
  return db
    .selectFrom("uploads")
    .select(JOB_COLUMNS)
    .where("compression_status", "=", "done")
    .where("deleted_at", "is", null)
    .where("derivatives_rev", "<", rev)
    .where("derivative_boots", "<", maxBoots)
    .where("original_path", "is not", null)
    .where("original_path", "!=", "")
    .orderBy("derivative_boots")
    .orderBy("created_at")
    .limit(limit)
    .execute();
}

/** Write-ahead: this boot's try counts even if the process dies during it. */
export async function countBoot(trx: Db, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await trx
    .updateTable("uploads")
    .set((eb) => ({ derivative_boots: eb("derivative_boots", "+", 1) }))
    .where("id", "in", [...ids])
    .execute();
}

export interface ReclaimRow {
  id: string;
  original_path: string | null;
  preview_path: string | null;
  display_path: string | null;
  thumbnail_path: string | null;
}

const RECLAIM_COLUMNS = ["id", "original_path", "preview_path", "display_path", "thumbnail_path"] as const;

/** Failed compressions whose original has waited long enough. */
export async function failedOriginalsBefore(db: Db, cutoff: string, limit: number): Promise<ReclaimRow[]> {
  return db
    .selectFrom("uploads")
    .select(RECLAIM_COLUMNS)
    .where("compression_status", "=", "failed")
    .where("deleted_at", "<=", cutoff)
    .where("media_reclaimed_at", "is", null)
    .limit(limit)
    .execute();
}

/** Uploads deleted on purpose (by the owner or a host) long enough ago. */
export async function deletedBefore(db: Db, cutoff: string, limit: number): Promise<ReclaimRow[]> {
  return db
    .selectFrom("uploads")
    .select(RECLAIM_COLUMNS)
    .where("deleted_by", "in", ["owner", "host"])
    .where("deleted_at", "<=", cutoff)
    .where("media_reclaimed_at", "is", null)
    .limit(limit)
    .execute();
}

export async function markReclaimed(
  db: Db,
  id: string,
  paths: "original" | "all",
  now: string,
): Promise<void> {
  await db
    .updateTable("uploads")
    .set(
      paths === "all"
        ? {
            original_path: "",
            preview_path: null,
            display_path: null,
            thumbnail_path: null,
            media_reclaimed_at: now,
          }
        : { original_path: "", media_reclaimed_at: now },
    )
    .where("id", "=", id)
    .execute();
}
