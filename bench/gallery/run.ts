// Event-gallery figures: upload ingest vs a plain copy, derivative time for a 24-megapixel JPEG,
// /feed latency under 200 concurrent clients, and SSE fan-out latency to 1,000 subscribers.
// Runs the TypeScript sources in-process on SQLite (or PostgreSQL with TEST_BACKEND=postgres and
// DATABASE_URL). Keep it under a minute.
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, open, rm, stat } from "node:fs/promises";
import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { createLogger } from "@app/kit/logger";
import autocannon from "autocannon";
import sharp from "sharp";
import { buildApp } from "../../services/event-gallery/src/app.js";
import { envSpec } from "../../services/event-gallery/src/config.js";
import { renderImage } from "../../services/event-gallery/src/derivatives/pipeline.js";
import type { EditableSettingsStore } from "../../services/event-gallery/src/settings/store.js";

const MiB = 1024 * 1024;
const UPLOAD_BYTES = 128 * MiB;
const CHUNK = randomBytes(MiB);
const ms = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};
const line = (label: string, value: string) => process.stdout.write(`${label.padEnd(44)} ${value}\n`);

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
// Serve without app.listen(): its onListen hook would start the derivative worker, whose
// rendering would compete with the measurements.
await app.ready();
await new Promise<void>((r) => app.server.listen(0, "127.0.0.1", r));
const { port } = app.server.address() as AddressInfo;
const base = `http://127.0.0.1:${port}/api/v1`;
let ipSeq = 0;

async function joinGuest(name: string): Promise<{ token: string; id: string }> {
  ipSeq++;
  const res = await fetch(`${base}/join`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": `10.9.${ipSeq >> 8}.${ipSeq & 255}` },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 201) throw new Error(`join ${res.status} ${await res.text()}`);
  const b = (await res.json()) as { token: string; user: { id: string } };
  return { token: b.token, id: b.user.id };
}

try {
  process.stdout.write(`event-gallery bench (${env.backend}, ${UPLOAD_BYTES / MiB} MiB uploads)\n`);
  const uploader = await joinGuest("Bench Uploader");

  // 1. Ingest: a streamed multipart upload vs a plain stream copy of the same bytes to the same disk.
  const head = await sharp({ create: { width: 16, height: 16, channels: 3, background: "#888" } })
    .jpeg()
    .toBuffer();
  const fileChunks = function* () {
    yield head;
    for (let sent = head.length; sent < UPLOAD_BYTES; sent += CHUNK.length)
      yield CHUNK.subarray(0, Math.min(CHUNK.length, UPLOAD_BYTES - sent));
  };
  const boundary = `----bench${randomBytes(8).toString("hex")}`;
  const pre = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="caption"\r\n\r\nbench\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="b.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
  );
  const post = Buffer.from(`\r\n--${boundary}--\r\n`);
  const uploadOnce = () =>
    new Promise<number>((resolve, reject) => {
      const t0 = process.hrtime.bigint();
      const req = request(`${base}/upload`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${uploader.token}`,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": pre.length + UPLOAD_BYTES + post.length,
        },
      });
      req.on("response", (res) => {
        res.resume();
        res.on("end", () =>
          res.statusCode === 201 ? resolve(ms(t0)) : reject(new Error(`upload ${res.statusCode}`)),
        );
      });
      req.on("error", reject);
      pipeline(
        Readable.from(
          (function* () {
            yield pre;
            yield* fileChunks();
            yield post;
          })(),
        ),
        req,
      ).catch(reject);
    });
  const originals = join(ctx.paths.mediaDir, "originals");
  await mkdir(originals, { recursive: true });
  const plainOnce = async () => {
    const t0 = process.hrtime.bigint();
    const path = join(originals, `plain-${newId()}`);
    await pipeline(Readable.from(fileChunks()), createWriteStream(path));
    const fh = await open(path, "r+");
    await fh.sync();
    await fh.close();
    const t = ms(t0);
    await rm(path);
    return t;
  };
  const ingest: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < 3; i++) {
    plain.push(await plainOnce());
    ingest.push(await uploadOnce());
  }
  const mbps = (t: number) => UPLOAD_BYTES / MiB / (t / 1000);
  line("upload ingest (median of 3)", `${mbps(median(ingest)).toFixed(0)} MiB/s`);
  line("plain stream copy + fsync (median of 3)", `${mbps(median(plain)).toFixed(0)} MiB/s`);
  line("ingest / plain copy", `${(median(plain) / median(ingest)).toFixed(2)}`);

  // 2. Derivatives for a 24-megapixel JPEG (6000×4000), one decode feeding all three sizes.
  const big = join(env.dataDir, "24mp.jpg");
  const raw = Buffer.alloc(6000 * 4000 * 3);
  for (let y = 0; y < 4000; y++)
    for (let x = 0; x < 6000; x++) {
      const o = (y * 6000 + x) * 3;
      raw[o] = x & 255;
      raw[o + 1] = y & 255;
      raw[o + 2] = (x * y) & 255;
    }
  await sharp(raw, { raw: { width: 6000, height: 4000, channels: 3 } })
    .jpeg({ quality: 90 })
    .toFile(big);
  const bigSize = (await stat(big)).size;
  const renders: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = process.hrtime.bigint();
    await renderImage(big, "image/jpeg");
    renders.push(ms(t0));
  }
  line(
    `derivatives, 24 MP JPEG (${(bigSize / MiB).toFixed(1)} MiB), median of 3`,
    `${median(renders).toFixed(0)} ms`,
  );

  // 3. /feed with 200 concurrent clients over 1,000 uploads by 20 guests with likes and tags.
  const { db } = ctx.database;
  const now = Date.now();
  const guests = Array.from({ length: 20 }, (_, i) => ({
    id: newId(),
    display_name: `Guest ${i}`,
    display_name_key: `guest ${i}`,
    created_at: new Date(now).toISOString(),
    updated_at: new Date(now).toISOString(),
  }));
  await db.insertInto("users").values(guests).execute();
  for (let batch = 0; batch < 10; batch++) {
    const rows = Array.from({ length: 100 }, (_, j) => {
      const i = batch * 100 + j;
      const at = new Date(now - (1000 - i) * 1000).toISOString();
      return {
        id: newId(),
        user_id: guests[i % 20]?.id ?? "",
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
        rows.flatMap((r) =>
          guests.slice(0, 5).map((g) => ({ upload_id: r.id, user_id: g.id, created_at: r.created_at })),
        ),
      )
      .execute();
  }
  const feedRun = await autocannon({
    url: `${base}/feed`,
    connections: 200,
    duration: 10,
    headers: { authorization: `Bearer ${uploader.token}` },
  });
  line(
    "GET /feed (30 items), 200 connections, 10 s",
    `p50 ${feedRun.latency.p50} ms, p99 ${feedRun.latency.p99} ms`,
  );
  line("  throughput, non-2xx", `${feedRun.requests.average.toFixed(0)} req/s, ${feedRun.non2xx} non-2xx`);
  // Baseline: an authenticated route with one small query, same load, to separate the feed's
  // own cost from the per-request cost of auth and the single SQLite connection.
  const baseRun = await autocannon({
    url: `${base}/me/context`,
    connections: 200,
    duration: 5,
    headers: { authorization: `Bearer ${uploader.token}` },
  });
  line(
    "  baseline GET /me/context, 200 connections",
    `p50 ${baseRun.latency.p50} ms, p99 ${baseRun.latency.p99} ms, ${baseRun.requests.average.toFixed(0)} req/s`,
  );

  // 4. SSE fan-out: one bus event to 1,000 subscribers (40 guests × 25 streams: the ticket
  // endpoint allows 30 per guest per minute).
  const streams: { close(): void }[] = [];
  const arrivals: number[] = [];
  let expectMark = "";
  let sentAt = 0n;
  for (let u = 0; u < 40; u++) {
    const guest = await joinGuest(`Watcher ${u}`);
    for (let s = 0; s < 25; s++) {
      const t = await fetch(`${base}/stream/ticket`, {
        method: "POST",
        headers: { authorization: `Bearer ${guest.token}` },
      });
      if (t.status !== 201) throw new Error(`ticket ${t.status} ${await t.text()}`);
      const { ticket } = (await t.json()) as { ticket: string };
      await new Promise<void>((resolve, reject) => {
        const req = request(`${base}/stream?ticket=${encodeURIComponent(ticket)}`, (res) => {
          if (res.statusCode !== 200) return reject(new Error(`stream ${res.statusCode}`));
          res.setEncoding("utf8");
          let buf = "";
          res.on("data", (d: string) => {
            buf += d;
            if (expectMark && buf.includes(expectMark)) {
              arrivals.push(ms(sentAt));
              buf = "";
            } else if (buf.length > 1_000_000) buf = "";
          });
          resolve();
        });
        req.on("error", reject);
        req.end();
        streams.push({ close: () => req.destroy() });
      });
    }
  }
  const rounds: { p50: number; p99: number; max: number }[] = [];
  for (let round = 0; round < 5; round++) {
    arrivals.length = 0;
    expectMark = `bench-mark-${round}`;
    sentAt = process.hrtime.bigint();
    ctx.bus.publish("upload-processed", { id: expectMark });
    for (let i = 0; i < 500 && arrivals.length < streams.length; i++)
      await new Promise((r) => setTimeout(r, 5));
    rounds.push({ p50: pct(arrivals, 50), p99: pct(arrivals, 99), max: Math.max(...arrivals) });
    if (arrivals.length < streams.length)
      throw new Error(`only ${arrivals.length} of ${streams.length} received`);
  }
  const mid = rounds.map((r) => r.p50);
  line(
    `SSE fan-out to ${streams.length} subscribers (median of 5)`,
    `p50 ${median(mid).toFixed(1)} ms, p99 ${median(rounds.map((r) => r.p99)).toFixed(1)} ms, max ${median(rounds.map((r) => r.max)).toFixed(1)} ms`,
  );
  for (const s of streams) s.close();
} finally {
  await app.close();
  await built.close();
  await env.cleanup();
}
