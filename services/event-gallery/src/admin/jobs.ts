import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";
import { countByCompressionStatus, exportJobRows, failedUploadRows } from "./repository.js";

/** Background work as the tables record it: export jobs, the derivative backlog, failed uploads. */
export async function jobsOverview(db: Kysely<GalleryDB>) {
  const jobs = await exportJobRows(db);
  return {
    export_jobs: jobs,
    derivative_backlog: await countByCompressionStatus(db, "processing"),
    failed_uploads: await countByCompressionStatus(db, "failed"),
  };
}

/** The admin's list shows this many failed uploads at most (the count says how many there are). */
export const FAILED_LIST_LIMIT = 200;

/** Stored errors already replace the media folder; anything else path-like is cut out too. */
const withoutPaths = (s: string) => s.replace(/(?:[A-Za-z]:)?(?:[\\/][^\s\\/:'"]+){2,}/g, "<path>");

/**
 * Uploads whose derivatives failed three times. The API offers no retry: the pipeline
 * soft-deleted them and refunded the quota, and the original stays for 14 days only for a manual
 * look. So this is a read-only list with the reason.
 */
export async function failedUploads(db: Kysely<GalleryDB>) {
  const [rows, total] = await Promise.all([
    failedUploadRows(db, FAILED_LIST_LIMIT),
    countByCompressionStatus(db, "failed"),
  ]);
  return {
    total,
    items: rows.map((r) => ({
      id: r.id,
      uploader: { id: r.user_id, display_name: r.display_name },
      mime_type: r.mime_type,
      size_bytes: Number(r.original_size_bytes),
      created_at: r.created_at,
      failed_at: r.deleted_at,
      attempts: Number(r.derivative_attempts),
      reason: r.derivative_last_error === null ? null : withoutPaths(r.derivative_last_error),
      original_kept: Boolean(r.original_path),
    })),
  };
}
