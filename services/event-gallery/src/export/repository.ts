import type { Dialect, Kysely, Selectable } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { ExportJobsTable, ExportKind, GalleryDB } from "../db/schema.js";
import { visibleUpload } from "../feed/visibility-repository.js";

/** Every SQL statement of the keepsake export (jobs, content snapshot, download accounting). */

export type ExportJob = Selectable<ExportJobsTable>;
export const EXPORT_KINDS: readonly ExportKind[] = ["zip", "html"];

export async function listJobs(db: Kysely<GalleryDB>): Promise<ExportJob[]> {
  return db.selectFrom("export_jobs").selectAll().orderBy("kind").execute();
}

export async function getJob(db: Kysely<GalleryDB>, kind: ExportKind): Promise<ExportJob | undefined> {
  return db.selectFrom("export_jobs").selectAll().where("kind", "=", kind).executeTakeFirst();
}

/** Create or reset the jobs of `kinds` as pending at `epoch` (one row per kind). */
export async function armJobs(
  trx: Kysely<GalleryDB>,
  kinds: readonly ExportKind[],
  epoch: number,
  now: string,
): Promise<void> {
  for (const kind of kinds) {
    const reset = {
      status: "pending" as const,
      epoch,
      progress_pct: 0,
      file_path: null,
      size_bytes: null,
      message: null,
      started_at: null,
      finished_at: null,
      updated_at: now,
    };
    await trx
      .insertInto("export_jobs")
      .values({ id: newId(), kind, ...reset })
      .onConflict((oc) => oc.column("kind").doUpdateSet(reset))
      .execute();
  }
}

/** Claim the next pending job of the current epoch; the loser of a race (or a stale job) gets nothing. */
export async function claimPendingJob(
  trx: Kysely<GalleryDB>,
  dialect: Dialect,
  epoch: number,
  now: string,
  lease?: Lease,
): Promise<ExportJob | undefined> {
  const candidate = await dialect
    .forUpdateSkipLocked(
      trx
        .selectFrom("export_jobs")
        .selectAll()
        .where("status", "=", "pending")
        .where("epoch", "=", epoch)
        .orderBy("kind", "desc")
        .limit(1),
    )
    .executeTakeFirst();
  if (!candidate) return undefined;
  return claimJob(trx, candidate.id, epoch, now, lease);
}

/** Who holds a running job and until when (epoch ms): a lapsed lease may be taken over. */
export interface Lease {
  owner: string;
  until: number;
}

/** The conditional UPDATE pending → running at `epoch`; undefined when the job moved on meanwhile. */
export async function claimJob(
  trx: Kysely<GalleryDB>,
  jobId: string,
  epoch: number,
  now: string,
  lease?: Lease,
): Promise<ExportJob | undefined> {
  const res = await trx
    .updateTable("export_jobs")
    .set({
      status: "running",
      progress_pct: 0,
      message: null,
      started_at: now,
      updated_at: now,
      lease_owner: lease?.owner ?? null,
      lease_until: lease?.until ?? null,
    })
    .where("id", "=", jobId)
    .where("status", "=", "pending")
    .where("epoch", "=", epoch)
    .executeTakeFirst();
  if (Number(res.numUpdatedRows) !== 1) return undefined;
  return trx.selectFrom("export_jobs").selectAll().where("id", "=", jobId).executeTakeFirst();
}

/** Identifies one claimed run: a re-armed or re-claimed row no longer matches it. */
export interface JobRun {
  id: string;
  epoch: number;
  started_at: string;
}

/** An update that only touches the row while it still is this run (not re-armed, not re-claimed). */
const updateRun = (db: Kysely<GalleryDB>, run: JobRun) =>
  db
    .updateTable("export_jobs")
    .where("id", "=", run.id)
    .where("epoch", "=", run.epoch)
    .where("status", "=", "running")
    .where("started_at", "=", run.started_at);

export async function setProgress(
  db: Kysely<GalleryDB>,
  run: JobRun,
  pct: number,
  now: string,
): Promise<boolean> {
  const res = await updateRun(db, run).set({ progress_pct: pct, updated_at: now }).executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function finishJob(
  trx: Kysely<GalleryDB>,
  run: JobRun,
  file: { path: string; size: number },
  now: string,
): Promise<boolean> {
  const res = await updateRun(trx, run)
    .set({
      status: "done",
      progress_pct: 100,
      file_path: file.path,
      size_bytes: file.size,
      message: null,
      finished_at: now,
      updated_at: now,
    })
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function failJob(
  db: Kysely<GalleryDB>,
  run: JobRun,
  message: string,
  now: string,
): Promise<void> {
  await updateRun(db, run).set({ status: "failed", message, finished_at: now, updated_at: now }).execute();
}

/** A run that stops without a result (superseded or shutting down) hands the row back as pending. */
export async function releaseRun(db: Kysely<GalleryDB>, run: JobRun, now: string): Promise<void> {
  await updateRun(db, run)
    .set({ status: "pending", progress_pct: 0, started_at: null, updated_at: now })
    .execute();
}

/** Extend the lease of a run this worker still holds; false when it lost the row. */
export async function renewLease(db: Kysely<GalleryDB>, run: JobRun, lease: Lease): Promise<boolean> {
  const res = await updateRun(db, run)
    .where("lease_owner", "=", lease.owner)
    .set({ lease_until: lease.until })
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/**
 * Running jobs whose lease lapsed (the process holding them died or hung): hand them back as
 * pending. A job another live process is building keeps a fresh lease and is never touched. Rows
 * without a lease were claimed by a build before leases existed.
 */
export async function reclaimLapsedRuns(db: Kysely<GalleryDB>, nowMs: number, now: string): Promise<number> {
  const res = await db
    .updateTable("export_jobs")
    .set({
      status: "pending",
      progress_pct: 0,
      started_at: null,
      lease_owner: null,
      lease_until: null,
      updated_at: now,
    })
    .where("status", "=", "running")
    .where((eb) => eb.or([eb("lease_until", "is", null), eb("lease_until", "<=", nowMs)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** Re-arm failed jobs at `epoch`; returns how many were re-armed. */
export async function rearmFailedJobs(trx: Kysely<GalleryDB>, epoch: number, now: string): Promise<number> {
  const failed = await trx.selectFrom("export_jobs").select("kind").where("status", "=", "failed").execute();
  await armJobs(
    trx,
    failed.map((j) => j.kind),
    epoch,
    now,
  );
  return failed.length;
}

/** Kinds whose job is behind the current epoch (a removal after release superseded them). */
export async function staleKinds(trx: Kysely<GalleryDB>, epoch: number): Promise<ExportKind[]> {
  const jobs = await trx.selectFrom("export_jobs").select(["kind", "epoch"]).execute();
  const have = new Map(jobs.map((j) => [j.kind, j.epoch]));
  return EXPORT_KINDS.filter((k) => have.get(k) !== epoch);
}

export async function countArmedJobs(db: Kysely<GalleryDB>, epoch: number): Promise<number> {
  const row = await db
    .selectFrom("export_jobs")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("epoch", "=", epoch)
    .where("status", "in", ["pending", "running"])
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

// ---- content snapshot -------------------------------------------------------------------------

export interface SnapshotUpload {
  id: string;
  user_id: string;
  display_name: string;
  caption: string;
  media_type: "image" | "video";
  mime_type: string;
  original_path: string;
  display_path: string | null;
  thumbnail_path: string | null;
  original_size_bytes: number;
  created_at: string;
}

/** Visible uploads (feed rules: not deleted, uploader neither banned nor hidden) with an original. */
const visibleUploadsQuery = (db: Kysely<GalleryDB>) =>
  db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .where(visibleUpload("u", "us"))
    .where("u.original_path", "is not", null)
    .where("u.original_path", "!=", "");

export async function visibleUploads(db: Kysely<GalleryDB>): Promise<SnapshotUpload[]> {
  const rows = await visibleUploadsQuery(db)
    .select([
      "u.id",
      "u.user_id",
      "us.display_name",
      "u.caption",
      "u.media_type",
      "u.mime_type",
      "u.original_path",
      "u.display_path",
      "u.thumbnail_path",
      "u.original_size_bytes",
      "u.created_at",
    ])
    .orderBy("u.created_at")
    .orderBy("u.id")
    .execute();
  return rows.map((r) => ({
    ...r,
    original_path: r.original_path ?? "",
    original_size_bytes: Number(r.original_size_bytes),
  }));
}

export async function visibleOriginalBytes(db: Kysely<GalleryDB>): Promise<number> {
  const row = await visibleUploadsQuery(db)
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("u.original_size_bytes"), eb.lit(0)).as("total"))
    .executeTakeFirstOrThrow();
  return Number(row.total);
}

export async function hashtagsOf(db: Kysely<GalleryDB>, uploadIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (let i = 0; i < uploadIds.length; i += 500) {
    const rows = await db
      .selectFrom("upload_hashtags")
      .select(["upload_id", "tag"])
      .where("upload_id", "in", uploadIds.slice(i, i + 500))
      .orderBy("tag")
      .execute();
    for (const r of rows) out.set(r.upload_id, [...(out.get(r.upload_id) ?? []), r.tag]);
  }
  return out;
}

export interface SnapshotComment {
  upload_id: string;
  author: string;
  text: string;
  created_at: string;
}

/** Live comments whose author is not banned, oldest first. */
export async function commentsOf(
  db: Kysely<GalleryDB>,
  uploadIds: string[],
): Promise<Map<string, SnapshotComment[]>> {
  const out = new Map<string, SnapshotComment[]>();
  for (let i = 0; i < uploadIds.length; i += 500) {
    const rows = await db
      .selectFrom("comments as c")
      .innerJoin("users as us", "us.id", "c.user_id")
      .select(["c.upload_id", "us.display_name as author", "c.text", "c.created_at"])
      .where("c.upload_id", "in", uploadIds.slice(i, i + 500))
      .where("c.deleted_at", "is", null)
      .where("us.is_banned", "=", 0)
      .orderBy("c.created_at")
      .orderBy("c.id")
      .execute();
    for (const r of rows) out.set(r.upload_id, [...(out.get(r.upload_id) ?? []), r]);
  }
  return out;
}

// ---- downloads ----------------------------------------------------------------------------------

export async function downloadsSince(
  db: Kysely<GalleryDB>,
  userId: string,
  since: string,
): Promise<{ count: number; oldest: string | null }> {
  const row = await db
    .selectFrom("export_downloads")
    .select((eb) => [eb.fn.countAll<number>().as("n"), eb.fn.min("created_at").as("oldest")])
    .where("user_id", "=", userId)
    .where("created_at", ">", since)
    .executeTakeFirstOrThrow();
  return { count: Number(row.n), oldest: row.oldest == null ? null : String(row.oldest) };
}

export async function recordDownload(
  trx: Kysely<GalleryDB>,
  userId: string,
  kind: ExportKind,
  now: string,
): Promise<void> {
  await trx
    .insertInto("export_downloads")
    .values({ id: newId(), user_id: userId, kind, created_at: now })
    .execute();
}

/** Whether a session row is still live (download tickets are bound to the session that asked). */
export async function sessionIsLive(db: Kysely<GalleryDB>, sessionId: string, now: string): Promise<boolean> {
  const row = await db
    .selectFrom("sessions")
    .select("id")
    .where("id", "=", sessionId)
    .where("revoked_at", "is", null)
    .where("expires_at", ">", now)
    .executeTakeFirst();
  return Boolean(row);
}
