/**
 * Gallery.zip build throughput: the real export worker (release → claim → yazl archive written to
 * a temp file, fsynced, renamed) over N bytes of originals, against a plain streaming copy of the
 * same files into one file with one fsync (the least any archive must do: read and write every
 * byte once): seconds, MB/s, the zip/copy time ratio, and peak RSS. Run by run.ts through the
 * harness, in a process of its own (the worker and the copy run there one after the other).
 *
 *   GALLERY_EXPORT_BENCH_MB   total original bytes in MiB (default 1024: a 2 GiB run takes 63-70 s here,
 *                             over the 60 s bench budget, mostly disk writes)
 *   GALLERY_EXPORT_BENCH_FILES number of files (default: one per ~8 MiB)
 */
import { execFileSync } from "node:child_process";
import { randomFillSync } from "node:crypto";
import { once } from "node:events";
import { createReadStream, createWriteStream, mkdirSync, statSync } from "node:fs";
import { open, rm, statfs, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { buildApp, envSpec } from "@app/event-gallery";
import { systemClock } from "@app/kit/clock";
import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { captureLogger } from "@app/kit/logger";

const MiB = 1024 * 1024;
const totalMb = Number(process.env.GALLERY_EXPORT_BENCH_MB ?? 1024);
const fileCount = Number(process.env.GALLERY_EXPORT_BENCH_FILES ?? Math.max(1, Math.round(totalMb / 8)));
const PASSWORD = "bench admin password";

export interface ExportFigures {
  files: number;
  mib: number;
  generateS: number;
  backend: string;
  zipS: number;
  zipMib: number;
  copyS: number;
  peakRssMib: number;
  rssBeforeMib: number;
  maxRssMib: number;
}

export async function measureExport(): Promise<ExportFigures> {
  const env = await createTestEnv("bench_gallery_export");
  const free = (await statfs(env.dataDir)).bavail * (await statfs(env.dataDir)).bsize;
  // Originals, the archive, its temp file and the copy must all fit, with room to spare.
  if (free < totalMb * MiB * 3.5) {
    throw new Error(`not enough free disk for ${totalMb} MiB (needs ~${Math.ceil(totalMb * 3.5)} MiB)`);
  }

  let peakRss = 0;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 50);

  const config = loadEnv(envSpec, {
    DATA_DIR: env.dataDir,
    DATABASE_URL: env.databaseUrl,
    GALLERY_ADMIN_PASSWORD: PASSWORD,
  });
  const built = await buildApp(config, { logger: captureLogger().logger, clock: systemClock });
  const { ctx } = built;
  const { db } = ctx.database;

  // Incompressible originals (like JPEG/MP4), sizes spread around the mean, from one random pool.
  const originals = join(ctx.paths.mediaDir, "originals");
  mkdirSync(originals, { recursive: true });
  const pool = randomFillSync(Buffer.alloc(32 * MiB));
  const genStart = performance.now();
  const now = systemClock.iso();
  const users: string[] = [];
  for (let u = 0; u < 8; u++) {
    const id = newId();
    users.push(id);
    await db
      .insertInto("users")
      .values({
        id,
        display_name: `Guest ${u}`,
        display_name_key: `guest ${u}`,
        recovery_pin_hash: null,
        password_hash: null,
        last_failed_pin_at: null,
        pin_locked_until: null,
        pin_reset_requested_at: null,
        client_join_id: null,
        uploads_hidden_at: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
  }
  const files: string[] = [];
  let written = 0;
  for (let i = 0; i < fileCount; i++) {
    const remaining = totalMb * MiB - written;
    const mean = remaining / (fileCount - i);
    const size = Math.max(1, Math.min(remaining, Math.round(mean * (0.5 + ((i * 7919) % 100) / 100))));
    const id = newId();
    const file = join(originals, `${id}.jpg`);
    const chunks: Buffer[] = [];
    for (let off = 0; off < size; off += pool.length) {
      const start = (i * 4099 + off) % (pool.length / 2);
      chunks.push(pool.subarray(start, start + Math.min(pool.length / 2, size - off)));
    }
    await writeFile(file, Buffer.concat(chunks));
    files.push(file);
    written += size;
    await db
      .insertInto("uploads")
      .values({
        id,
        user_id: users[i % users.length]!,
        client_upload_id: null,
        media_type: "image",
        mime_type: "image/jpeg",
        original_path: `originals/${id}.jpg`,
        preview_path: null,
        display_path: null,
        thumbnail_path: null,
        original_size_bytes: size,
        width: 4000,
        height: 3000,
        duration_s: null,
        compression_status: "done",
        // Newer than any derivative pipeline: the derivative worker leaves these rows alone.
        derivatives_rev: 1_000,
        derivative_last_error: null,
        deleted_at: null,
        deleted_by: null,
        media_reclaimed_at: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
  }
  const genS = (performance.now() - genStart) / 1000;

  // Each phase starts with no dirty pages left from the previous one.
  execFileSync("sync");

  // Plain copy baseline: read every original, append it to one file, fsync once.
  const copyTarget = join(env.dataDir, "copy.bin");
  const copyStart = performance.now();
  const out = createWriteStream(copyTarget);
  for (const f of files)
    for await (const chunk of createReadStream(f)) if (!out.write(chunk)) await once(out, "drain");
  await new Promise<void>((resolve, reject) =>
    out.end((err?: Error | null) => (err ? reject(err) : resolve())),
  );
  const fh = await open(copyTarget, "r+");
  await fh.sync();
  await fh.close();
  const copyS = (performance.now() - copyStart) / 1000;
  await rm(copyTarget);
  execFileSync("sync");

  // The real thing: release through the API, the app's worker builds Gallery.zip first.
  built.startWorkers();
  const login = await built.app.inject({
    method: "POST",
    url: "/api/v1/admin/login",
    payload: { password: PASSWORD },
  });
  const token = login.json().token as string;
  peakRss = process.memoryUsage().rss;
  const rssBefore = peakRss;
  const zipReady = new Promise<void>((resolve) =>
    ctx.bus.subscribe((event, data) => {
      if (event === "export-ready" && data.kind === "zip") resolve();
    }),
  );
  const zipStart = performance.now();
  const rel = await built.app.inject({
    method: "POST",
    url: "/api/v1/host/event/release",
    headers: { authorization: `Bearer ${token}` },
  });
  if (rel.statusCode !== 200) throw new Error(`release failed: ${rel.statusCode} ${rel.body}`);
  await zipReady;
  const zipS = (performance.now() - zipStart) / 1000;
  const zipRss = peakRss;
  const job = await db
    .selectFrom("export_jobs")
    .selectAll()
    .where("kind", "=", "zip")
    .executeTakeFirstOrThrow();
  const zipBytes = statSync(job.file_path!).size;

  clearInterval(sampler);
  await built.app.close();
  await built.close();
  await env.cleanup();

  return {
    files: fileCount,
    mib: written / MiB,
    generateS: genS,
    backend: env.backend,
    zipS,
    zipMib: zipBytes / MiB,
    copyS,
    peakRssMib: zipRss / MiB,
    rssBeforeMib: rssBefore / MiB,
    maxRssMib: process.resourceUsage().maxRSS / 1024,
  };
}
