import { randomUUID } from "node:crypto";
import { mkdir, readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { TimerHandle } from "@app/kit/clock";
import type { BackgroundWorker, GalleryContext } from "../context.js";
import { getEvent } from "../event/state.js";
import { BuildAbandoned, BuildFailure, type BuildRun, type KeepsakeBuilder } from "./builder.js";
import { removeQuietly } from "./files.js";
import { isReady } from "./keepsake.js";
import {
  armJobs,
  claimPendingJob,
  failJob,
  finishJob,
  listJobs,
  reclaimLapsedRuns,
  releaseRun,
  renewLease,
  staleKinds,
} from "./repository.js";

/**
 * A claimed job belongs to this worker while its lease is fresh; it is renewed every third of
 * this while building, so another process takes the job over only once this one died or hung.
 */
export const LEASE_MS = 60_000;

/** Removals after release are batched: the keepsake is rebuilt 20 s after the last one. */
export const REBUILD_DEBOUNCE_MS = 20_000;
/** Safety net for jobs armed by another process (PostgreSQL deployments) or missed kicks. */
export const POLL_MS = 30_000;

/** Bus events after which the keepsake may be stale (their writers bumped the epoch). */
export const INVALIDATING_EVENTS = new Set([
  "upload-removed",
  "user-hidden",
  "user-unhidden",
  "comment-removed",
  "upload-updated",
]);

export interface ExportWorker extends BackgroundWorker {
  stop(): Promise<void>;
  /** Look for claimable jobs now (after a commit that armed some). */
  kick(): void;
  /** Resolves when no build is running or queued (tests and shutdown). */
  idle(): Promise<void>;
  /** Prune archive files that no job row points at (after a reopen). */
  pruneArchives(): Promise<void>;
}

/** What the export worker needs of the gallery context, and the archive builder. */
export type ExportWorkerDeps = Pick<GalleryContext, "database" | "clock" | "logger" | "bus" | "paths"> & {
  builder: KeepsakeBuilder;
};

/**
 * Claims export jobs of the current epoch one at a time (two CPU cores are shared by everything),
 * builds them, and re-arms stale jobs 20 s after the last content removal.
 */
export function createExportWorker(deps: ExportWorkerDeps): ExportWorker {
  const { database, clock, logger } = deps;
  const log = logger.child({ module: "export" });
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = true;
  let abort = new AbortController();
  let poll: TimerHandle | null = null;
  let debounce: TimerHandle | null = null;
  let unsubscribe: (() => void) | null = null;
  let starting: Promise<void> | null = null;
  let rearming: Promise<void> | null = null;
  // This worker's identity in export_jobs.lease_owner (one per process and start).
  const owner = randomUUID();

  async function claimNext(): Promise<BuildRun | undefined> {
    return database.writeTx(async (trx) => {
      const event = await getEvent(trx);
      if (!event.export_released_at) return undefined;
      const job = await claimPendingJob(trx, database.dialect, event.export_epoch, clock.iso(), {
        owner,
        until: clock.now() + LEASE_MS,
      });
      if (!job?.started_at) return undefined;
      return { id: job.id, kind: job.kind, epoch: job.epoch, started_at: job.started_at };
    });
  }

  async function runOne(run: BuildRun): Promise<void> {
    let file: { path: string; size: number } | null = null;
    const heartbeat = clock.setInterval(() => {
      renewLease(database.db, run, { owner, until: clock.now() + LEASE_MS }).catch((err) =>
        log.warn({ err, kind: run.kind }, "renewing the export lease failed"),
      );
    }, LEASE_MS / 3);
    try {
      file = await deps.builder.build(run, abort.signal);
      const committed = await database.writeTx(async (trx) => {
        const event = await getEvent(trx);
        if (event.export_epoch !== run.epoch || !event.export_released_at) return false;
        return finishJob(trx, run, { path: file!.path, size: file!.size }, clock.iso());
      });
      if (!committed) throw new BuildAbandoned("superseded at commit");
    } catch (err) {
      if (file) await removeQuietly(file.path).catch(() => {});
      if (err instanceof BuildAbandoned) {
        log.info({ kind: run.kind, epoch: run.epoch, reason: err.message }, "keepsake build abandoned");
        await releaseRun(database.db, run, clock.iso());
        return;
      }
      const message =
        err instanceof BuildFailure
          ? err.message
          : `Building the archive failed (${(err as NodeJS.ErrnoException)?.code ?? "internal error"}).`;
      log.error({ err, kind: run.kind, epoch: run.epoch }, "keepsake build failed");
      await failJob(database.db, run, message, clock.iso());
      return;
    } finally {
      heartbeat.cancel();
    }
    // Committed: from here on nothing may touch the new archive.
    log.info({ kind: run.kind, epoch: run.epoch, bytes: file.size }, "keepsake archive ready");
    await pruneArchives().catch((err) => log.warn({ err }, "pruning superseded archives failed"));
    deps.bus.publish("export-ready", { kind: run.kind, epoch: run.epoch });
  }

  async function loop(): Promise<void> {
    do {
      again = false;
      for (;;) {
        if (stopped) return;
        const run = await claimNext();
        if (!run) break;
        await runOne(run);
      }
    } while (again && !stopped);
  }

  function kick(): void {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = loop()
      .catch((err) => log.error({ err }, "export worker loop failed"))
      .finally(() => {
        running = null;
      });
  }

  /** Re-arm the jobs a removal after release superseded; no-op when they are current. */
  async function rearmStale(): Promise<boolean> {
    return database.writeTx(async (trx) => {
      const event = await getEvent(trx);
      if (!event.export_released_at) return false;
      const kinds = await staleKinds(trx, event.export_epoch);
      if (kinds.length === 0) return false;
      await armJobs(trx, kinds, event.export_epoch, clock.iso());
      return true;
    });
  }

  function scheduleRebuild(): void {
    debounce?.cancel();
    debounce = clock.setTimeout(() => {
      debounce = null;
      rearming = rearmStale()
        .then((armed) => {
          if (armed) kick();
        })
        .catch((err) => log.error({ err }, "re-arming the keepsake failed"))
        .finally(() => {
          rearming = null;
        });
    }, REBUILD_DEBOUNCE_MS);
  }

  /**
   * Delete superseded and withdrawn archives. An unreferenced archive of the current epoch is left
   * alone: another worker may have renamed it into place and not yet committed its row.
   */
  async function pruneArchives(): Promise<void> {
    const event = await getEvent(database.db);
    const keep = new Set(
      (await listJobs(database.db)).filter((j) => isReady(event, j)).map((j) => j.file_path),
    );
    for (const name of await readdir(deps.paths.exportsDir)) {
      const m = /^(zip|html)-e(\d+)-.+\.zip$/.exec(name);
      const path = join(deps.paths.exportsDir, name);
      if (!m || keep.has(path)) continue;
      const current = event.export_released_at !== null && Number(m[2]) === event.export_epoch;
      if (!current) await removeQuietly(path);
    }
  }

  async function init(): Promise<void> {
    await mkdir(deps.paths.exportsDir, { recursive: true });
    // Temp files of a build that died (untouched for a whole lease: a live build writes to its
    // file all the time, possibly in another process), and runs whose lease lapsed.
    for (const name of await readdir(deps.paths.exportsDir)) {
      if (!name.startsWith(".tmp-")) continue;
      const path = join(deps.paths.exportsDir, name);
      const st = await stat(path).catch(() => null);
      if (st && Date.now() - st.mtimeMs > LEASE_MS) await removeQuietly(path);
    }
    await reclaimLapsedRuns(database.db, clock.now(), clock.iso());
    // A removal whose debounce was cut short by a restart still gets its rebuild.
    await rearmStale();
    unsubscribe = deps.bus.subscribe((event) => {
      if (INVALIDATING_EVENTS.has(event)) scheduleRebuild();
    });
    // The poll also takes over jobs whose holder died (lease lapsed) in another process.
    poll = clock.setInterval(() => {
      reclaimLapsedRuns(database.db, clock.now(), clock.iso())
        .catch((err) => log.warn({ err }, "reclaiming lapsed export runs failed"))
        .finally(kick);
    }, POLL_MS);
    kick();
  }

  return {
    name: "export",
    start() {
      if (!stopped) return;
      stopped = false;
      abort = new AbortController();
      starting = init().catch((err) => log.error({ err }, "export worker start failed"));
    },
    async stop() {
      stopped = true;
      await starting;
      unsubscribe?.();
      poll?.cancel();
      debounce?.cancel();
      abort.abort();
      await running;
    },
    kick,
    async idle() {
      await starting;
      while (running || rearming) await (running ?? rearming);
    },
    pruneArchives,
  };
}
