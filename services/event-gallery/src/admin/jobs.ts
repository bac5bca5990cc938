import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";
import { countByCompressionStatus, exportJobRows } from "./repository.js";

/** Background work as the tables record it: export jobs, the derivative backlog, failed uploads. */
export async function jobsOverview(db: Kysely<GalleryDB>) {
  const jobs = await exportJobRows(db);
  return {
    export_jobs: jobs,
    derivative_backlog: await countByCompressionStatus(db, "processing"),
    failed_uploads: await countByCompressionStatus(db, "failed"),
  };
}
