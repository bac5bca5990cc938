// Clients of the gallery bench, each run by the harness in its own process (bench.task).
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, open, readFile, rm, stat } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { renderImage } from "@app/event-gallery/bench";
import { newId } from "@app/kit/ids";
import sharp from "sharp";
import { median, type TaskIo, wallMs } from "../harness/index.js";

const MiB = 1024 * 1024;
const CHUNK = randomBytes(MiB);

async function jpegHead(): Promise<Buffer> {
  return sharp({ create: { width: 16, height: 16, channels: 3, background: "#888" } })
    .jpeg()
    .toBuffer();
}

function* fileChunks(head: Buffer, bytes: number) {
  yield head;
  for (let sent = head.length; sent < bytes; sent += CHUNK.length)
    yield CHUNK.subarray(0, Math.min(CHUNK.length, bytes - sent));
}

/** Streams `count` multipart uploads of `bytes` each, one after the other; returns their times (ms). */
export async function uploads(args: {
  url: string;
  token: string;
  bytes: number;
  count: number;
}): Promise<number[]> {
  const head = await jpegHead();
  const boundary = `----bench${randomBytes(8).toString("hex")}`;
  const pre = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="caption"\r\n\r\nbench\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="b.jpg"\r\nContent-Type: image/jpeg\r\n\r\n`,
  );
  const post = Buffer.from(`\r\n--${boundary}--\r\n`);
  const once = () =>
    new Promise<number>((resolve, reject) => {
      const t0 = performance.now();
      const req = request(`${args.url}/api/v1/upload`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${args.token}`,
          "content-type": `multipart/form-data; boundary=${boundary}`,
          "content-length": pre.length + args.bytes + post.length,
        },
      });
      req.on("response", (res) => {
        res.resume();
        res.on("end", () =>
          res.statusCode === 201
            ? resolve(performance.now() - t0)
            : reject(new Error(`upload ${res.statusCode}`)),
        );
      });
      req.on("error", reject);
      pipeline(
        Readable.from(
          (function* () {
            yield pre;
            yield* fileChunks(head, args.bytes);
            yield post;
          })(),
        ),
        req,
      ).catch(reject);
    });
  const times: number[] = [];
  for (let i = 0; i < args.count; i++) times.push(await once());
  return times;
}

/** The baseline of ingest: a plain stream copy of the same bytes to the same folder, plus fsync. */
export async function plainCopies(args: { dir: string; bytes: number; count: number }): Promise<number[]> {
  const head = await jpegHead();
  await mkdir(args.dir, { recursive: true });
  const times: number[] = [];
  for (let i = 0; i < args.count; i++) {
    const t0 = performance.now();
    const path = join(args.dir, `plain-${newId()}`);
    await pipeline(Readable.from(fileChunks(head, args.bytes)), createWriteStream(path));
    const fh = await open(path, "r+");
    await fh.sync();
    await fh.close();
    times.push(performance.now() - t0);
    await rm(path);
  }
  return times;
}

/** Derivatives of a 24-megapixel JPEG (6000×4000), one decode feeding all three sizes (median of 3). */
export async function renderBig(args: { dir: string }): Promise<{ ms: number; bytes: number }> {
  const big = join(args.dir, "24mp.jpg");
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
  const bytes = (await stat(big)).size;
  const renders: number[] = [];
  for (let i = 0; i < 3; i++) {
    const t0 = performance.now();
    await renderImage(big, "image/jpeg");
    renders.push(performance.now() - t0);
  }
  await rm(big);
  return { ms: median(renders), bytes };
}

/**
 * SSE subscribers: `streamsPerGuest` streams for each guest token. Protocol with the orchestrator:
 * sends "ready" once every stream is open; then for each {mark} it receives, answers "armed",
 * and once every stream has seen the mark sends {arrivals} (wall-clock ms); {done} ends it.
 */
export async function sseSubscribers(
  args: { url: string; tokens: string[]; streamsPerGuest: number },
  io: TaskIo,
): Promise<number> {
  const base = `${args.url}/api/v1`;
  const streams: { close(): void }[] = [];
  let arrivals: number[] = [];
  let expectMark = "";
  let allSeen: (() => void) | undefined;
  for (const token of args.tokens) {
    for (let s = 0; s < args.streamsPerGuest; s++) {
      const t = await fetch(`${base}/stream/ticket`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
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
              arrivals.push(wallMs());
              buf = "";
              if (arrivals.length === streams.length) allSeen?.();
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
  await io.send("ready");
  for (;;) {
    const m = (await io.next()) as { mark?: string; done?: boolean };
    if (m.done || !m.mark) break;
    arrivals = [];
    expectMark = m.mark;
    const seen = new Promise<void>((r) => {
      allSeen = r;
    });
    await io.send("armed");
    await Promise.race([seen, new Promise((r) => setTimeout(r, 10_000))]);
    await io.send({ arrivals });
  }
  for (const s of streams) s.close();
  return streams.length;
}

/**
 * A photo-like 12-megapixel JPEG (4000×3000, smooth structure plus sensor-like grain, EXIF
 * orientation 6 as phones write it), about the size a phone camera produces.
 */
export async function makePhoto12mp(path: string): Promise<number> {
  const structure = await sharp({
    create: {
      width: 500,
      height: 375,
      channels: 3,
      background: "#808080",
      noise: { type: "gaussian", mean: 128, sigma: 70 },
    },
  })
    .resize(4000, 3000, { kernel: "cubic" })
    .raw()
    .toBuffer();
  const grain = await sharp({
    create: {
      width: 4000,
      height: 3000,
      channels: 3,
      background: "#000000",
      noise: { type: "gaussian", mean: 0, sigma: 6 },
    },
  })
    .raw()
    .toBuffer();
  for (let i = 0; i < structure.length; i++)
    structure[i] = Math.max(0, Math.min(255, (structure[i] ?? 0) + (grain[i] ?? 0) - 3));
  await sharp(structure, { raw: { width: 4000, height: 3000, channels: 3 } })
    .jpeg({ quality: 92 })
    .withMetadata({ orientation: 6 })
    .toFile(path);
  return (await stat(path)).size;
}

/**
 * The burst: `count` multipart uploads of one 12 MP photo, all started at once, spread over the
 * guests' tokens. Returns when each got its 201 (wall clock) and the upload ids.
 */
export async function burstUploads(args: {
  url: string;
  tokens: string[];
  dir: string;
  count: number;
}): Promise<{ startedAt: number; bytes: number; done: { id: string; at: number }[] }> {
  const file = join(args.dir, "burst-12mp.jpg");
  const bytes = await makePhoto12mp(file);
  const photo = await readFile(file);
  const startedAt = wallMs();
  const done = await Promise.all(
    Array.from({ length: args.count }, async (_, i) => {
      const form = new FormData();
      form.set("client_upload_id", `burst-${i}`);
      form.set("caption", `burst ${i}`);
      form.set("file", new Blob([photo], { type: "image/jpeg" }), `IMG_${1000 + i}.jpg`);
      const res = await fetch(`${args.url}/api/v1/upload`, {
        method: "POST",
        headers: { authorization: `Bearer ${args.tokens[i % args.tokens.length]}` },
        body: form,
      });
      const at = wallMs();
      if (res.status !== 201) throw new Error(`burst upload ${res.status} ${await res.text()}`);
      return { id: ((await res.json()) as { upload: { id: string } }).upload.id, at };
    }),
  );
  await rm(file);
  return { startedAt, bytes, done };
}

/**
 * Reactions while the feed is read (issue 27): `perSecond` like/unlike requests per second spread
 * over the guests' tokens and the uploads, each guest alternating like and unlike on each upload.
 * Sends "running" once started; stops on the orchestrator's next message and returns the counts.
 */
export async function reactions(
  args: { url: string; tokens: string[]; ids: string[]; perSecond: number },
  io: TaskIo,
): Promise<{ sent: number; ok: number; failed: number; seconds: number }> {
  const liked = new Set<string>();
  let sent = 0;
  let ok = 0;
  let failed = 0;
  const started = performance.now();
  const one = async () => {
    const i = sent++;
    const token = args.tokens[i % args.tokens.length] as string;
    const id = args.ids[Math.floor(i / args.tokens.length) % args.ids.length] as string;
    const key = `${token}\n${id}`;
    const like = !liked.has(key);
    if (like) liked.add(key);
    else liked.delete(key);
    try {
      const res = await fetch(`${args.url}/api/v1/upload/${id}/like`, {
        method: like ? "PUT" : "DELETE",
        headers: { authorization: `Bearer ${token}` },
      });
      await res.arrayBuffer();
      if (res.status === 200) ok++;
      else failed++;
    } catch {
      failed++;
    }
  };
  // Scheduled against the clock, not by sleeping after each request, so slow answers do not lower the rate.
  const timer = setInterval(() => {
    const due = Math.floor(((performance.now() - started) / 1000) * args.perSecond);
    while (sent < due) void one();
  }, 10);
  await io.send("running");
  await io.next();
  clearInterval(timer);
  return { sent, ok, failed, seconds: (performance.now() - started) / 1000 };
}
