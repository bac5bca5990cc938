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
