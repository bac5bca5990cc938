import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { BackgroundWorker, GalleryContext } from "../context.js";
import * as repo from "./repository.js";
import { partialsDir, sweepExpiredResumables } from "./resumable.js";
import { DERIVATIVES, ORIGINALS, removeQuietly } from "./storage.js";
import { ownerLiveness, ownerOfTemp, releaseOwner, renewOwner } from "./temp-owners.js";

export type LeftoverDeps = Pick<GalleryContext, "database" | "clock" | "config" | "paths" | "tempOwner">;
export type UploadSweeperDeps = LeftoverDeps & Pick<GalleryContext, "logger">;

/**
 * Sweep of files that dead processes and requests left behind (at start-up and then every quarter
 * of GALLERY_UPLOAD_IDLE_S). A `.tmp-<owner>-*` file goes once its owner is dead (temp-owners.ts),
 * never while it lives; this instance's own files are its requests' business. A `.tmp-*` file
 * without an owner (named before owners existed) goes when untouched for twice
 * GALLERY_UPLOAD_IDLE_S, as its request would have written it at least once per
 * GALLERY_UPLOAD_IDLE_S. A partial tus file belongs to its key: without a live key it is an orphan.
 */
export async function sweepLeftovers(
  deps: LeftoverDeps,
  own: string = deps.tempOwner,
): Promise<{ temp_files: number; partials: number }> {
  const nowMs = deps.clock.now();
  const idleMs = deps.config.GALLERY_UPLOAD_IDLE_S * 1000;
  const staleBefore = nowMs - 2 * idleMs;
  const owners = await ownerLiveness(deps.paths.dataDir, nowMs - idleMs);
  let tempFiles = 0;
  for (const dir of [ORIGINALS, DERIVATIVES]) {
    const folder = join(deps.paths.mediaDir, dir);
    for (const name of await namesIn(folder)) {
      if (!name.startsWith(".tmp-")) continue;
      const owner = ownerOfTemp(name);
      const path = join(folder, name);
      if (owner === own) continue;
      if (
        owner === null
          ? await removeIfOlder(path, staleBefore)
          : owners.isDead(owner) && (await removed(path))
      )
        tempFiles++;
    }
  }
  await owners.forget();
  const live = await repo.liveResumableKeys(deps.database.db);
  let partials = 0;
  const folder = partialsDir(deps.paths.dataDir);
  for (const name of await namesIn(folder)) {
    if (live.has(name)) continue;
    // A key created this very moment by another process: its row may commit right after the file.
    if (await removeIfOlder(join(folder, name), staleBefore)) partials++;
  }
  return { temp_files: tempFiles, partials };
}

async function namesIn(folder: string): Promise<string[]> {
  return readdir(folder).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [];
    throw err;
  });
}

async function removed(path: string): Promise<boolean> {
  const st = await stat(path).catch(() => null);
  if (!st?.isFile()) return false;
  await removeQuietly(path);
  return true;
}

async function removeIfOlder(path: string, beforeMs: number): Promise<boolean> {
  const st = await stat(path).catch(() => null);
  if (!st?.isFile() || st.mtimeMs >= beforeMs) return false;
  await removeQuietly(path);
  return true;
}

/**
 * Renews this instance's temp-file ownership and sweeps leftovers every quarter of
 * GALLERY_UPLOAD_IDLE_S (so a dead owner's files go within one and a quarter of it after its last
 * renewal), and removes expired resumable uploads every few minutes. Each pass that removes
 * something says how much in the log. Stopping releases the ownership (the app's requests are
 * done by then).
 */
export function createUploadSweeper(deps: UploadSweeperDeps, intervalMs = 5 * 60_000): BackgroundWorker {
  const timers: { cancel(): void }[] = [];
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const { dataDir } = deps.paths;
  const leftovers = async (first: boolean) => {
    try {
      await renewOwner(dataDir, deps.tempOwner, deps.clock.now());
      const left = await sweepLeftovers(deps);
      if (first) deps.logger.info(left, "start-up sweep of upload leftovers");
      else if (left.temp_files + left.partials > 0) deps.logger.info(left, "upload leftovers removed");
    } catch (err) {
      deps.logger.error({ err }, "upload leftover sweep failed");
    }
  };
  const pass = async (first: boolean) => {
    try {
      if (first) await leftovers(true);
      let expired = 0;
      for (
        let n = await sweepExpiredResumables(deps);
        n > 0 && !stopped;
        n = await sweepExpiredResumables(deps)
      )
        expired += n;
      if (expired > 0 || first) deps.logger.info({ expired }, "expired resumable uploads removed");
    } catch (err) {
      deps.logger.error({ err }, "upload sweep failed");
    }
  };
  return {
    name: "upload-sweeper",
    start() {
      running = pass(true);
      const every = (ms: number, fn: () => Promise<void>) =>
        timers.push(
          deps.clock.setInterval(() => {
            running = running.then(fn);
          }, ms),
        );
      every(Math.max(250, (deps.config.GALLERY_UPLOAD_IDLE_S * 1000) / 4), () => leftovers(false));
      every(intervalMs, () => pass(false));
    },
    async stop() {
      stopped = true;
      for (const t of timers) t.cancel();
      await running;
      await releaseOwner(dataDir, deps.tempOwner).catch(() => {});
    },
  };
}
