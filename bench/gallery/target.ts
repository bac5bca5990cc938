// The event-gallery as a bench target, in its own process (bench/harness). Served without
// app.listen(): its onListen hook would start the derivative worker, whose rendering would
// compete with the measurements. Commands: `seedFeed` (1,000 uploads by 20 guests with likes and
// tags) and `publish` (one bus event; returns the wall-clock time it was sent).
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { createLogger } from "@app/kit/logger";
import { buildApp } from "../../services/event-gallery/src/app.js";
import { envSpec } from "../../services/event-gallery/src/config.js";
import type { EditableSettingsStore } from "../../services/event-gallery/src/settings/store.js";
import { type ServerTarget, wallMs } from "../harness/index.js";

export async function startGallery(): Promise<ServerTarget> {
  const env = await createTestEnv("bench_gallery");
  const config = loadEnv(envSpec, {
    DATA_DIR: env.dataDir,
    DATABASE_URL: env.databaseUrl,
    GALLERY_ADMIN_PASSWORD: "bench password 1234",
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

  // 1,000 uploads, 5,000 likes (5 per upload, spread over the guests), `users` guests (300 for
  // the wedding of issue 12).
  const seedFeed = async (arg: unknown) => {
    const users = Number((arg as { users?: number } | null)?.users ?? 20);
    const { db } = ctx.database;
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
    return null;
  };
  const publish = (mark: unknown) => {
    const sentAt = wallMs();
    ctx.bus.publish("upload-processed", { id: String(mark) });
    return sentAt;
  };

  return {
    url: `http://127.0.0.1:${port}`,
    info: { backend: env.backend, originals: join(ctx.paths.mediaDir, "originals"), dataDir: env.dataDir },
    commands: { seedFeed, publish },
    close: async () => {
      await app.close();
      await built.close();
      await env.cleanup();
    },
  };
}
