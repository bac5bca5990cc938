import { readdir, stat } from "node:fs/promises";
import { join } from "node:path";
import type { BackgroundWorker, GalleryContext } from "../context.js";
import * as repo from "./repository.js";
import { partialsDir, sweepExpiredResumables } from "./resumable.js";
import { DERIVATIVES, ORIGINALS, removeQuietly } from "./storage.js";

/**
 * Start-up sweep of files a crashed process left behind. A `.tmp-*` file belongs to one request
 * that writes it at least once per GALLERY_UPLOAD_IDLE_S (else the request is ended and the file
 * removed), so one untouched for longer (plus a margin) has no owner left, in this process or
 * another. A partial tus file belongs to its key: without a live key it is an orphan.
 */
export async function sweepLeftovers(ctx: GalleryContext): Promise<{ temp_files: number; partials: number }> {
  const nowMs = ctx.clock.now();
  const staleBefore = nowMs - 2 * ctx.config.GALLERY_UPLOAD_IDLE_S * 1000;
  let tempFiles = 0;
  for (const dir of [ORIGINALS, DERIVATIVES]) {
    const folder = join(ctx.paths.mediaDir, dir);
    for (const name of await namesIn(folder)) {
      if (!name.startsWith(".tmp-")) continue;
      if (await removeIfOlder(join(folder, name), staleBefore)) tempFiles++;
    }
  }
  const live = await repo.liveResumableKeys(ctx.database.db);
  let partials = 0;
  const folder = partialsDir(ctx.paths.dataDir);
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

async function removeIfOlder(path: string, beforeMs: number): Promise<boolean> {
  const st = await stat(path).catch(() => null);
  if (!st?.isFile() || st.mtimeMs >= beforeMs) return false;
  await removeQuietly(path);
  return true;
}

/**
 * Runs the start-up sweep once, then removes expired resumable uploads every few minutes. Each
 * pass that removes something says how much in the log.
 */
export function createUploadSweeper(ctx: GalleryContext, intervalMs = 5 * 60_000): BackgroundWorker {
  let timer: { cancel(): void } | null = null;
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const pass = async (first: boolean) => {
    try {
      if (first) {
        const left = await sweepLeftovers(ctx);
        ctx.logger.info(left, "start-up sweep of upload leftovers");
      }
      let expired = 0;
      for (
        let n = await sweepExpiredResumables(ctx);
        n > 0 && !stopped;
        n = await sweepExpiredResumables(ctx)
      )
        expired += n;
      if (expired > 0 || first) ctx.logger.info({ expired }, "expired resumable uploads removed");
    } catch (err) {
      ctx.logger.error({ err }, "upload sweep failed");
    }
  };
  return {
    name: "upload-sweeper",
    start() {
      running = pass(true);
      timer = ctx.clock.setInterval(() => {
        running = running.then(() => pass(false));
      }, intervalMs);
    },
    async stop() {
      stopped = true;
      timer?.cancel();
      await running;
    },
  };
}
