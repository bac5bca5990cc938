import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** The SQL behind the admin's jobs page: export jobs and upload counts by compression status. */
type Db = Kysely<GalleryDB>;

export function exportJobRows(db: Db) {
  return db
    .selectFrom("export_jobs")
    .select([
      "id",
      "kind",
      "status",
      "epoch",
      "progress_pct",
      "message",
      "started_at",
      "finished_at",
      "updated_at",
    ])
    .orderBy("kind")
    .execute();
}

export async function countByCompressionStatus(db: Db, status: "processing" | "failed"): Promise<number> {
  let q = db
    .selectFrom("uploads")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("compression_status", "=", status);
  // A failed upload is soft-deleted by design; the backlog only counts live rows.
  if (status === "processing") q = q.where("deleted_at", "is", null);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

/** Failed uploads (soft-deleted by the pipeline) with their uploader, newest first. */
export function failedUploadRows(db: Db, limit: number) {
  return db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select([
      "u.id",
      "u.user_id",
      "us.display_name",
      "u.mime_type",
      "u.original_size_bytes",
      "u.original_path",
      "u.created_at",
      "u.deleted_at",
      "u.derivative_attempts",
      "u.derivative_last_error",
    ])
    .where("u.compression_status", "=", "failed")
    .orderBy("u.created_at", "desc")
    .orderBy("u.id", "desc")
    .limit(limit)
    .execute();
}
