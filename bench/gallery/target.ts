// The event-gallery as a bench target, in its own process (bench/harness). Served without
// app.listen(): its onListen hook would start the derivative worker, whose rendering would
// compete with the measurements (the burst part starts it with `startWorkers`). Commands:
// `seedFeed` (1,000 uploads by 20 guests with likes and tags), `publish` (one bus event; returns
// the wall-clock time it was sent), `watchThumbnails` / `thumbnailTimes` (when each upload's
// thumbnail became servable, wall clock), `profileStart` / `profileStop` (a V8 CPU profile of this
// process only, written as .cpuprofile for Chrome DevTools or speedscope).
import { writeFile } from "node:fs/promises";
import { Session } from "node:inspector/promises";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { buildApp, envSpec } from "@app/event-gallery";
import { DERIVATIVES_REV, type EditableSettingsStore, type GalleryDB } from "@app/event-gallery/bench";
import { loadEnv } from "@app/kit/config";
import type { Kysely } from "@app/kit/db";
import { createTestEnv } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { createLogger } from "@app/kit/logger";
import { type ServerTarget, wallMs } from "../harness/index.js";

export async function startGallery(args: { backend?: "sqlite" | "postgres" } = {}): Promise<ServerTarget> {
  // Each run gets its own fresh database on the backend the orchestrator asks for (PostgreSQL
  // needs DATABASE_URL: a server where the bench may create databases).
  if (args.backend) process.env.TEST_BACKEND = args.backend;
  const env = await createTestEnv("bench_gallery");
  const config = loadEnv(envSpec, {
    DATA_DIR: env.dataDir,
    DATABASE_URL: env.databaseUrl,
    GALLERY_ADMIN_PASSWORD: "bench password 1234",
    // The load generator gives each guest its own X-Forwarded-For address (join limits per IP).
    TRUST_PROXY: "loopback",
  });
  const built = await buildApp(config, { logger: createLogger({ name: "bench", level: "error" }) });
  const { app, ctx } = built;
  await (ctx.settings as EditableSettingsStore).update({
    feed_rate_per_min: 100_000,
    delta_rate_per_min: 100_000,
  });
  await app.ready();
  await new Promise<void>((r) => app.server.listen(0, "127.0.0.1", r));
  const { port } = app.server.address() as AddressInfo;

  const seedFeed = async (arg: unknown) => {
    await seedWedding(ctx.database.db, Number((arg as { users?: number } | null)?.users ?? 20));
    return null;
  };
  const publish = (mark: unknown) => {
    const sentAt = wallMs();
    ctx.bus.publish("upload-processed", { id: String(mark) });
    return sentAt;
  };

  // Thumbnail times: the first moment each upload's row has a thumbnail (checked on every event
  // that names it, so the watcher costs nothing while nothing happens).
  const thumbAt = new Map<string, number>();
  const thumbWaiters = new Set<() => void>();
  let unwatch: (() => void) | null = null;
  const watchThumbnails = () => {
    unwatch ??= ctx.bus.subscribe((event, data) => {
      const id = typeof data.id === "string" ? data.id : null;
      if (!id || thumbAt.has(id) || (event !== "upload-updated" && event !== "upload-processed")) return;
      const seenAt = wallMs();
      void ctx.database.db
        .selectFrom("uploads")
        .select("thumbnail_path")
        .where("id", "=", id)
        .executeTakeFirst()
        .then((row) => {
          if (!row?.thumbnail_path || thumbAt.has(id)) return;
          thumbAt.set(id, seenAt);
          for (const w of thumbWaiters) w();
        });
    });
    return null;
  };
  const thumbnailTimes = async (arg: unknown) => {
    const { ids, timeoutMs } = arg as { ids: string[]; timeoutMs: number };
    const deadline = wallMs() + timeoutMs;
    while (ids.some((id) => !thumbAt.has(id)) && wallMs() < deadline)
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          thumbWaiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, Math.max(0, deadline - wallMs()));
        thumbWaiters.add(done);
      });
    return Object.fromEntries(ids.map((id) => [id, thumbAt.get(id) ?? null]));
  };
  const profiler = new Session();
  const profileStart = async () => {
    profiler.connect();
    await profiler.post("Profiler.enable");
    await profiler.post("Profiler.setSamplingInterval", { interval: 200 });
    await profiler.post("Profiler.start");
    return null;
  };
  const profileStop = async (file: unknown) => {
    const { profile } = await profiler.post("Profiler.stop");
    await writeFile(String(file), JSON.stringify(profile));
    profiler.disconnect();
    return String(file);
  };

  return {
    url: `http://127.0.0.1:${port}`,
    info: { backend: env.backend, originals: join(ctx.paths.mediaDir, "originals"), dataDir: env.dataDir },
    commands: {
      seedFeed,
      publish,
      startWorkers: () => {
        built.startWorkers();
        return null;
      },
      watchThumbnails,
      thumbnailTimes,
      // Connection waits of the writer pool so far (PostgreSQL: the one pool; SQLite: the writer).
      poolStats: () => ({ ...ctx.database.poolStats }),
      profileStart,
      profileStop,
    },
    close: async () => {
      unwatch?.();
      await app.close();
      await built.close();
      await env.cleanup();
    },
  };
}

// 1,000 uploads, 5,000 likes (5 per upload, spread over the guests), `users` guests (300 for
// the wedding of issue 12).
export async function seedWedding(db: Kysely<GalleryDB>, users: number): Promise<void> {
  const now = Date.now();
  const guests = Array.from({ length: users }, (_, i) => ({
    id: newId(),
    display_name: `Guest ${i}`,
    display_name_key: `guest ${i}`,
    created_at: new Date(now).toISOString(),
    updated_at: new Date(now).toISOString(),
  }));
  for (let i = 0; i < guests.length; i += 100)
    await db
      .insertInto("users")
      .values(guests.slice(i, i + 100))
      .execute();
  for (let batch = 0; batch < 10; batch++) {
    const rows = Array.from({ length: 100 }, (_, j) => {
      const i = batch * 100 + j;
      const at = new Date(now - (1000 - i) * 1000).toISOString();
      return {
        id: newId(),
        user_id: guests[i % Math.min(users, 20)]?.id ?? "",
        caption: `photo ${i}`,
        media_type: "image" as const,
        mime_type: "image/jpeg",
        original_path: `originals/x${i}.jpg`,
        thumbnail_path: `derivatives/x${i}-thumbnail.jpg`,
        preview_path: `derivatives/x${i}-preview.jpg`,
        display_path: `derivatives/x${i}-display.jpg`,
        original_size_bytes: 1000,
        compression_status: "done" as const,
        // Current pipeline version: the burst part starts the worker, whose boot backfill must
        // not try to regenerate these rows (their files do not exist).
        derivatives_rev: DERIVATIVES_REV,
        created_at: at,
        updated_at: at,
      };
    });
    await db.insertInto("uploads").values(rows).execute();
    await db
      .insertInto("upload_hashtags")
      .values(
        rows.flatMap((r, k) => [
          { upload_id: r.id, tag: `tag${k % 7}` },
          { upload_id: r.id, tag: "party" },
        ]),
      )
      .execute();
    await db
      .insertInto("likes")
      .values(
        rows.flatMap((r, k) =>
          [0, 1, 2, 3, 4].map((n) => ({
            upload_id: r.id,
            user_id: guests[(batch * 100 + k + n * 61) % users]?.id ?? "",
            created_at: r.created_at,
          })),
        ),
      )
      .execute();
  }
}
