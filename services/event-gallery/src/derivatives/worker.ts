import type { TimerHandle } from "@app/kit/clock";
import type { GalleryContext } from "../context.js";
import { bumpEpochIfReleased } from "../event/state.js";
import { softDeleteAndRefund } from "../uploads/repository.js";
import {
  derivativeRelPath,
  ensureMediaDirs,
  removeQuietly,
  resolveMediaPath,
  writeFileDurably,
} from "../uploads/storage.js";
import {
  DERIVATIVES_REV,
  defaultVideoTools,
  type Rendered,
  renderImage,
  renderImageStaged,
  renderVideo,
  type StagedRender,
  type VideoTools,
} from "./pipeline.js";
import * as repo from "./repository.js";

export const MAX_ATTEMPTS = 3;
export const MAX_BACKFILL_BOOTS = 3;
export const BACKFILL_ROWS_PER_BOOT = 200;
export const FAILED_ORIGINAL_RETENTION_MS = 14 * 24 * 3_600_000;
export const DELETED_MEDIA_RETENTION_MS = 24 * 3_600_000;
const RECLAIM_BATCH = 500;

export interface DerivativeWorkerOptions {
  /** Renders at once; default GALLERY_DERIVATIVE_WORKERS (the core count). */
  concurrency?: number;
  /** Safety-net poll; new uploads also wake the worker through the bus. */
  pollMs?: number;
  reclaimEveryMs?: number;
  video?: Partial<VideoTools>;
  /**
   * Awaited once an image's thumbnail is visible and before its preview and display are encoded
   * (tests hold the render there to look at the in-between state; a throw fails the attempt).
   */
  afterThumbnail?: (uploadId: string) => Promise<void>;
}

export interface DerivativeWorker {
  name: string;
  /** Starts the background loop, the boot backfill and the reclaim timer; returns at once. */
  start(): void;
  stop(): Promise<void>;
  /** Render until no claimable upload is left (also what the background loop runs). */
  processPending(): Promise<number>;
  /**
   * Fail rows whose last attempt died with its process (write-ahead counter at 3, still
   * processing, lease lapsed). Run at boot.
   */
  failExhausted(): Promise<number>;
  /** Regenerate rows of older pipeline versions (run once per boot by start()). */
  backfill(): Promise<{ regenerated: number; failed: number }>;
  /** Delete media whose retention has passed. */
  reclaim(): Promise<{ failedOriginals: number; deletedUploads: number }>;
}

/** Keep filesystem paths out of stored error messages (they reach host/admin screens). */
const describe = (err: unknown, mediaDir: string) =>
  (err instanceof Error ? err.message : String(err)).split(mediaDir).join("<media>").slice(0, 500);

export type DerivativeWorkerDeps = Pick<
  GalleryContext,
  "database" | "clock" | "logger" | "config" | "paths" | "bus" | "tempOwner"
>;

export function createDerivativeWorker(
  deps: DerivativeWorkerDeps,
  opts: DerivativeWorkerOptions = {},
): DerivativeWorker {
  const { database, clock, logger } = deps;
  const concurrency = Math.max(1, opts.concurrency ?? deps.config.GALLERY_DERIVATIVE_WORKERS);
  const tools: VideoTools = { ...defaultVideoTools(clock, deps.config), ...opts.video };
  // A claim holds its row this long: past the longest render (the video timeout), so a live
  // render never loses its row, and short enough that a dead process's row comes back soon.
  const leaseMs = Math.max(tools.timeoutMs, 120_000) + 60_000;
  let stopping = false;
  let running = false;
  let pumping: Promise<number> | null = null;
  let again = false;
  let backfilling: Promise<unknown> | null = null;
  let reclaiming: Promise<unknown> | null = null;
  const timers: TimerHandle[] = [];
  let unsubscribe: (() => void) | null = null;

  const originalOf = (job: repo.Job) => {
    if (!job.original_path) throw new Error("the original is gone");
    return resolveMediaPath(deps.paths.mediaDir, job.original_path);
  };

  async function render(job: repo.Job): Promise<Rendered> {
    const abs = originalOf(job);
    return job.media_type === "video" ? renderVideo(abs, tools) : renderImage(abs, job.mime_type);
  }

  /** Thumbnail first (images): `larger` encodes preview and display from the same decode. */
  async function renderStaged(job: repo.Job): Promise<StagedRender> {
    const abs = originalOf(job);
    if (job.media_type === "image") return renderImageStaged(abs, job.mime_type);
    return { ...(await renderVideo(abs, tools)), larger: null };
  }

  /** One derivative file, durably (before any row points at it). */
  async function write(job: repo.Job, variant: string, data: Buffer | null): Promise<string | null> {
    if (!data) return null;
    const rel = derivativeRelPath(job.id, variant);
    await writeFileDurably(resolveMediaPath(deps.paths.mediaDir, rel), data, deps.tempOwner);
    return rel;
  }

  /** Files first (durably), then the row that points at them. */
  async function store(job: repo.Job, r: Rendered): Promise<repo.DerivativeOutcome> {
    const thumbnail = await write(job, "thumbnail", r.thumbnail);
    const preview = await write(job, "preview", r.preview);
    const display = await write(job, "display", r.display);
    return {
      width: r.width,
      height: r.height,
      duration_s: r.duration_s,
      thumbnail_path: thumbnail ?? "",
      preview_path: preview,
      display_path: display,
      rev: DERIVATIVES_REV,
    };
  }

  /**
   * Thumbnails first: an image's thumbnail is written and its row points at it (the feed tile
   * shows, `upload-updated`) before preview and display are encoded from the same decode. The
   * claim's attempt covers both steps; a failure in either counts as that one attempt.
   */
  async function processJob(job: repo.Job): Promise<void> {
    try {
      const r = await renderStaged(job);
      const thumbnail_path = (await write(job, "thumbnail", r.thumbnail)) ?? "";
      let larger: { preview: string | null; display: string | null } = { preview: null, display: null };
      if (r.larger) {
        const shown = await database.writeTx((trx) =>
          repo.markThumbnail(trx, job.id, { thumbnail_path, width: r.width, height: r.height }, clock.iso()),
        );
        if (shown) deps.bus.publish("upload-updated", { id: job.id, user_id: job.user_id });
        await opts.afterThumbnail?.(job.id);
        const { preview, display } = await r.larger();
        larger = {
          preview: await write(job, "preview", preview),
          display: await write(job, "display", display),
        };
      }
      const outcome: repo.DerivativeOutcome = {
        width: r.width,
        height: r.height,
        duration_s: r.duration_s,
        thumbnail_path,
        preview_path: larger.preview,
        display_path: larger.display,
        rev: DERIVATIVES_REV,
      };
      await database.writeTx((trx) => repo.markDone(trx, job.id, outcome, clock.iso()));
      deps.bus.publish("upload-processed", { id: job.id, user_id: job.user_id });
    } catch (err) {
      const message = describe(err, deps.paths.mediaDir);
      logger.warn(
        { upload_id: job.id, attempt: job.derivative_attempts, err: message },
        "derivative attempt failed",
      );
      await recordFailure(job, message);
    }
  }

  /** After the last attempt: failed, soft-deleted by the system, quota refunded, original kept. */
  async function recordFailure(job: repo.Job, message: string | null): Promise<void> {
    const giveUp = job.derivative_attempts >= MAX_ATTEMPTS;
    const removed = await database.writeTx(async (trx) => {
      await repo.recordError(trx, job.id, message);
      if (!giveUp) return false;
      const now = clock.iso();
      await repo.markFailed(trx, job.id, now);
      const deleted = await softDeleteAndRefund(trx, job, "system", now);
      if (deleted) await bumpEpochIfReleased(trx, clock);
      return deleted;
    });
    if (removed) {
      logger.error({ upload_id: job.id }, "derivatives failed 3 times; upload removed, original kept");
      deps.bus.publish("upload-removed", { id: job.id, user_id: job.user_id });
    }
  }

  async function claim(): Promise<repo.Job | undefined> {
    const nowMs = clock.now();
    return database.writeTx((trx) =>
      repo.claimNext(trx, database.dialect, MAX_ATTEMPTS, { nowMs, until: nowMs + leaseMs }),
    );
  }

  async function lane(): Promise<number> {
    let done = 0;
    for (;;) {
      if (stopping) return done;
      const job = await claim();
      if (!job) return done;
      await processJob(job);
      done++;
    }
  }

  async function processPending(): Promise<number> {
    if (pumping) {
      // A lane may already have found the queue empty: look again once this round ends.
      again = true;
      return pumping;
    }
    pumping = (async () => {
      const counts = await Promise.all(Array.from({ length: concurrency }, () => lane()));
      return counts.reduce((a, b) => a + b, 0);
    })().finally(() => {
      pumping = null;
      if (again) {
        again = false;
        kick();
      }
    });
    return pumping;
  }

  function kick(): void {
    if (!running) return;
    processPending().catch((err) =>
      logger.error({ err: describe(err, deps.paths.mediaDir) }, "derivative worker error"),
    );
  }

  async function failExhausted(): Promise<number> {
    const rows = await repo.exhausted(database.db, MAX_ATTEMPTS, clock.now(), 1_000);
    for (const job of rows) await recordFailure(job, null);
    return rows.length;
  }

  async function backfill(): Promise<{ regenerated: number; failed: number }> {
    const stale = await repo.staleRows(
      database.db,
      DERIVATIVES_REV,
      MAX_BACKFILL_BOOTS,
      BACKFILL_ROWS_PER_BOOT,
    );
    if (stale.length === 0) return { regenerated: 0, failed: 0 };
    await database.writeTx((trx) =>
      repo.countBoot(
        trx,
        stale.map((r) => r.id),
      ),
    );
    logger.info({ rows: stale.length, rev: DERIVATIVES_REV }, "derivative backfill: starting");
    let regenerated = 0;
    let failed = 0;
    for (const [i, job] of stale.entries()) {
      if (stopping) break;
      try {
        const outcome = await store(job, await render(job));
        await database.writeTx((trx) => repo.markDone(trx, job.id, outcome, clock.iso()));
        deps.bus.publish("upload-processed", { id: job.id, user_id: job.user_id });
        regenerated++;
      } catch (err) {
        // The old derivatives stay; the row is retried on the next boot (at most 3 boots).
        failed++;
        const message = describe(err, deps.paths.mediaDir);
        await database.writeTx((trx) => repo.recordError(trx, job.id, message));
      }
      if ((i + 1) % 20 === 0 || i + 1 === stale.length)
        logger.info({ done: i + 1, of: stale.length, regenerated, failed }, "derivative backfill: progress");
    }
    return { regenerated, failed };
  }

  async function reclaim(): Promise<{ failedOriginals: number; deletedUploads: number }> {
    const now = clock.now();
    const nowIso = clock.iso();
    const unlink = async (rel: string | null) => {
      if (rel) await removeQuietly(resolveMediaPath(deps.paths.mediaDir, rel));
    };
    // Files go first: a crash between unlink and update only repeats an idempotent unlink.
    const failedRows = await repo.failedOriginalsBefore(
      database.db,
      new Date(now - FAILED_ORIGINAL_RETENTION_MS).toISOString(),
      RECLAIM_BATCH,
    );
    for (const r of failedRows) {
      await unlink(r.original_path);
      await repo.markReclaimed(database.db, r.id, "original", nowIso);
    }
    const deletedRows = await repo.deletedBefore(
      database.db,
      new Date(now - DELETED_MEDIA_RETENTION_MS).toISOString(),
      RECLAIM_BATCH,
    );
    for (const r of deletedRows) {
      for (const p of [r.original_path, r.preview_path, r.display_path, r.thumbnail_path]) await unlink(p);
      await repo.markReclaimed(database.db, r.id, "all", nowIso);
    }
    if (failedRows.length + deletedRows.length > 0)
      logger.info(
        { failed_originals: failedRows.length, deleted_uploads: deletedRows.length },
        "media reclaimed",
      );
    return { failedOriginals: failedRows.length, deletedUploads: deletedRows.length };
  }

  const logErr = (what: string) => (err: unknown) =>
    logger.error({ err: describe(err, deps.paths.mediaDir) }, `${what} failed`);

  let booting: Promise<void> | null = null;
  return {
    name: "derivatives",
    start() {
      if (running) return;
      running = true;
      stopping = false;
      booting = ensureMediaDirs(deps.paths.mediaDir)
        .then(() => failExhausted())
        .then(() => boot())
        .catch(logErr("derivative worker start"));
    },
    async stop() {
      running = false;
      stopping = true;
      unsubscribe?.();
      unsubscribe = null;
      for (const t of timers.splice(0)) t.cancel();
      await Promise.allSettled([booting, pumping, backfilling, reclaiming]);
    },
    processPending,
    failExhausted,
    backfill,
    reclaim,
  };

  function boot(): void {
    if (!running) return;
    unsubscribe = deps.bus.subscribe((event) => {
      if (event === "new-upload" || event === "upload-pending") kick();
    });
    timers.push(clock.setInterval(kick, opts.pollMs ?? 5_000));
    const runReclaim = () => {
      reclaiming ??= reclaim()
        .catch(logErr("media reclaim"))
        .finally(() => {
          reclaiming = null;
        });
    };
    timers.push(clock.setInterval(runReclaim, opts.reclaimEveryMs ?? 3_600_000));
    // Fresh uploads first, then the backfill, in the background: start() does not wait on them.
    kick();
    backfilling = (pumping ?? Promise.resolve())
      .then(() => backfill())
      .catch(logErr("derivative backfill"))
      .finally(() => {
        backfilling = null;
      });
    runReclaim();
  }
}
