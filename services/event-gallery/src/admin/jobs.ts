import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** Background work as the tables record it: export jobs, the derivative backlog, failed uploads. */
export async function jobsOverview(db: Kysely<GalleryDB>) {
  const jobs = await db
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
  const count = async (status: "processing" | "failed") => {
    let q = db
      .selectFrom("uploads")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("compression_status", "=", status);
    // A failed upload is soft-deleted by design; the backlog only counts live rows.
    if (status === "processing") q = q.where("deleted_at", "is", null);
    return Number((await q.executeTakeFirstOrThrow()).n);
  };
  return {
    export_jobs: jobs,
    derivative_backlog: await count("processing"),
    failed_uploads: await count("failed"),
  };
}
