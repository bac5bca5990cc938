import type { FileHandle } from "node:fs/promises";
import { open } from "node:fs/promises";
import { toIso } from "@app/kit/clock";
import { conflict, notFound, tooManyRequests, unauthorized } from "@app/kit/errors";
import type { AuthedUser, GalleryContext } from "../context.js";
import type { ExportKind } from "../db/schema.js";
import { type EventRow, getEvent } from "../event/state.js";
import { ARCHIVE_NAMES } from "./builder.js";
import {
  downloadsSince,
  EXPORT_KINDS,
  type ExportJob,
  getJob,
  listJobs,
  rearmFailedJobs,
  recordDownload,
  sessionIsLive,
} from "./repository.js";
import type { TicketStore } from "./tickets.js";

/** Readiness is derived on every read: released, job at the event's epoch, job done. */
export const isReady = (event: EventRow, job: ExportJob | undefined): job is ExportJob =>
  Boolean(event.export_released_at && job && job.epoch === event.export_epoch && job.status === "done");

export interface JobStatus {
  status: "none" | ExportJob["status"];
  progress_pct: number;
  ready: boolean;
  message?: string;
}

/**
 * One archive's status as clients see it. A job left behind by a newer epoch is reported as
 * pending (its rebuild is scheduled) rather than as the done/failed state of old content.
 */
function jobStatus(event: EventRow, job: ExportJob | undefined, isHost: boolean): JobStatus {
  if (!event.export_released_at || !job) return { status: "none", progress_pct: 0, ready: false };
  if (job.epoch !== event.export_epoch) return { status: "pending", progress_pct: 0, ready: false };
  const out: JobStatus = { status: job.status, progress_pct: job.progress_pct, ready: isReady(event, job) };
  if (isHost && job.status === "failed" && job.message) out.message = job.message;
  return out;
}

const DAY_MS = 24 * 3600_000;

export interface OpenedDownload {
  handle: FileHandle;
  size: number;
  fileName: string;
}

/** What the keepsake's status and downloads need: parts of the gallery context and the ticket store. */
export type KeepsakeDeps = Pick<GalleryContext, "database" | "clock" | "settings"> & { tickets: TicketStore };

export type KeepsakeService = ReturnType<typeof createKeepsakeService>;

export function createKeepsakeService(deps: KeepsakeDeps) {
  async function exportStatus(user: AuthedUser) {
    const { db } = deps.database;
    const event = await getEvent(db);
    const jobs = new Map((await listJobs(db)).map((j) => [j.kind, j]));
    const isHost = user.role !== "guest";
    return {
      released: event.export_released_at !== null,
      epoch: event.export_epoch,
      zip: jobStatus(event, jobs.get("zip"), isHost),
      html: jobStatus(event, jobs.get("html"), isHost),
    };
  }

  /** POST /export/ticket: only for a ready archive, within the per-user daily download limit. */
  async function issueDownloadTicket(
    user: AuthedUser,
    kind: ExportKind,
  ): Promise<{ ticket: string; expires_at: string }> {
    const { db } = deps.database;
    const event = await getEvent(db);
    if (!isReady(event, await getJob(db, kind)))
      throw notFound("The keepsake is not ready for download.", "not_ready");
    const limit = await deps.settings.get("export_downloads_per_day");
    const now = deps.clock.now();
    const used = await downloadsSince(db, user.id, toIso(now - DAY_MS));
    if (used.count + (await deps.tickets.outstanding(user.id)) >= limit) {
      const retryMs = used.oldest ? Date.parse(used.oldest) + DAY_MS - now : 60_000;
      throw tooManyRequests(
        retryMs / 1000,
        `You can download the keepsake ${limit} times a day.`,
        "rate_limited",
        {
          limit,
        },
      );
    }
    const { ticket, expiresAt } = await deps.tickets.issue({
      kind,
      userId: user.id,
      sessionId: user.sessionId,
    });
    return { ticket, expires_at: toIso(expiresAt) };
  }

  /**
   * GET /export/{kind}/download: redeem the ticket (401 when bad), check that its session is still
   * live, that the archive is still current (404 otherwise), record the download, and open the file
   * (an open handle survives a concurrent prune of the archive).
   */
  async function openDownload(ticket: string | undefined, kind: ExportKind): Promise<OpenedDownload> {
    const t = ticket ? await deps.tickets.redeem(ticket, kind) : null;
    const badTicket = () => unauthorized("The download ticket is invalid or expired.", "invalid_ticket");
    if (!t) throw badTicket();
    const { db } = deps.database;
    if (!(await sessionIsLive(db, t.sessionId, deps.clock.iso()))) throw badTicket();
    const event = await getEvent(db);
    const job = await getJob(db, kind);
    if (!isReady(event, job) || !job.file_path)
      throw notFound("This keepsake is no longer current.", "not_current");
    let handle: FileHandle;
    try {
      handle = await open(job.file_path, "r");
    } catch {
      throw notFound("This keepsake is no longer current.", "not_current");
    }
    try {
      const { size } = await handle.stat();
      await deps.database.writeTx((trx) => recordDownload(trx, t.userId, kind, deps.clock.iso()));
      return { handle, size, fileName: ARCHIVE_NAMES[kind] };
    } catch (err) {
      await handle.close();
      throw err;
    }
  }

  /** POST /host/export/rebuild: re-arm failed jobs at the current epoch. */
  async function rebuildFailed(): Promise<ExportJob[]> {
    const rearmed = await deps.database.writeTx(async (trx) => {
      const event = await getEvent(trx);
      if (!event.export_released_at) throw conflict("invalid_state", "The gallery is not released.");
      return rearmFailedJobs(trx, event.export_epoch, deps.clock.iso());
    });
    if (rearmed === 0) throw conflict("no_failed_job", "No keepsake archive has failed.");
    return listJobs(deps.database.db);
  }

  return { exportStatus, issueDownloadTicket, openDownload, rebuildFailed };
}

/** Job rows as hosts and the admin see them. */
export const jobView = (job: ExportJob) => ({
  kind: job.kind,
  status: job.status,
  epoch: job.epoch,
  progress_pct: job.progress_pct,
  size_bytes: job.size_bytes,
  message: job.status === "failed" ? job.message : null,
  started_at: job.started_at,
  finished_at: job.finished_at,
  updated_at: job.updated_at,
});

export const isExportKind = (k: unknown): k is ExportKind => EXPORT_KINDS.includes(k as ExportKind);
