// Event-gallery figures: upload ingest vs a plain copy, derivative time for a 24-megapixel JPEG,
// /feed under 200 concurrent clients vs bare Fastify serving the same bytes, and SSE fan-out
// latency to 1,000 subscribers. The gallery, the baseline and every client run in their own
// processes (bench/harness). SQLite, or PostgreSQL with TEST_BACKEND=postgres and DATABASE_URL.
import { median, percentile, startBench } from "../harness/index.js";

const MiB = 1024 * 1024;
const UPLOAD_BYTES = 128 * MiB;
const clients = new URL("./clients.ts", import.meta.url);

const bench = startBench("gallery", "upload ingest, 24 MP derivatives, /feed under load, SSE fan-out");
const gallery = await bench.server("event-gallery", new URL("./target.ts", import.meta.url), "startGallery");
const base = `${gallery.url}/api/v1`;
let ipSeq = 0;

async function joinGuest(name: string): Promise<string> {
  ipSeq++;
  const res = await fetch(`${base}/join`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-forwarded-for": `10.9.${ipSeq >> 8}.${ipSeq & 255}` },
    body: JSON.stringify({ name }),
  });
  if (res.status !== 201) throw new Error(`join ${res.status} ${await res.text()}`);
  return ((await res.json()) as { token: string }).token;
}

const uploader = await joinGuest("Bench Uploader");
// GALLERY_BENCH_PARTS=feed (comma-separated: ingest, render, feed, sse) runs only those parts.
const parts = new Set((process.env.GALLERY_BENCH_PARTS ?? "ingest,render,feed,sse").split(","));

if (parts.has("ingest")) {
  // 1. Ingest: streamed multipart uploads (client in its own process) vs a plain stream copy of the
  // same bytes to the same folder (also its own process). Server CPU per upload from the OS.
  const plain = await bench.task<number[]>(clients, "plainCopies", {
    dir: gallery.info.originals,
    bytes: UPLOAD_BYTES,
    count: 3,
  }).result;
  const cpu0 = await gallery.cpuSeconds();
  const ingest = await bench.task<number[]>(clients, "uploads", {
    url: gallery.url,
    token: uploader,
    bytes: UPLOAD_BYTES,
    count: 3,
  }).result;
  const uploadCpuMs = (((await gallery.cpuSeconds()) - cpu0) * 1000) / 3;
  const mbps = (t: number) => UPLOAD_BYTES / MiB / (t / 1000);
  bench.figure({
    label: `upload ingest, ${UPLOAD_BYTES / MiB} MiB (median of 3)`,
    value: mbps(median(ingest.value)),
    unit: "MiB/s",
    baseline: { label: "plain stream copy + fsync", value: mbps(median(plain.value)) },
    note: `server CPU ${uploadCpuMs.toFixed(0)} ms per upload`,
  });
}

if (parts.has("render")) {
  // 2. Derivatives of a 24-megapixel JPEG, in a process of its own.
  const render = await bench.task<{ ms: number; bytes: number }>(clients, "renderBig", {
    dir: gallery.info.dataDir,
  }).result;
  bench.figure({
    label: `derivatives, 24 MP JPEG (${(render.value.bytes / MiB).toFixed(1)} MiB), median of 3`,
    value: render.value.ms,
    unit: "ms",
  });
}

// 3. /feed and /feed/delta at 10 and 200 connections over the wedding of issue 12 (1,000 uploads,
// 5,000 likes, 300 guests), each against bare Fastify serving the same bytes in the same run;
// /me/context (auth + one small query) separates the per-request cost of auth from the feed's.
// One viewer's token for every connection (autocannon sends one header set).
if (parts.has("feed")) {
  await gallery.call("seedFeed", { users: 300 });
  const auth = { authorization: `Bearer ${uploader}` };
  const feedRes = await fetch(`${base}/feed`, { headers: auth });
  if (feedRes.status !== 200) throw new Error(`feed ${feedRes.status}`);
  const feedBody = await feedRes.text();
  // A client reconnecting after a minute: the seed's uploads are one per second, so ~60 changes.
  const cursor = Buffer.from(JSON.stringify([new Date(Date.now() - 60_000).toISOString(), ""])).toString(
    "base64url",
  );
  const deltaPath = `/api/v1/feed/delta?cursor=${cursor}`;
  const deltaRes = await fetch(`${gallery.url}${deltaPath}`, { headers: auth });
  if (deltaRes.status !== 200) throw new Error(`delta ${deltaRes.status}`);
  const deltaBody = await deltaRes.text();
  const delta = JSON.parse(deltaBody) as { items: unknown[]; changes: unknown[] };
  bench.note(
    `/feed page ${feedBody.length} bytes (30 items); /feed/delta ${deltaBody.length} bytes (${delta.items.length} new items)`,
  );
  const bare = await bench.server(
    "bare Fastify",
    new URL("../harness/bare.ts", import.meta.url),
    "startBare",
    {
      routes: [
        { path: "/api/v1/feed", body: feedBody, contentType: "application/json; charset=utf-8" },
        { path: "/api/v1/feed/delta", body: deltaBody, contentType: "application/json; charset=utf-8" },
      ],
    },
  );
  const rows = [];
  for (const connections of [10, 200]) {
    const load = { connections, duration: 10, headers: auth };
    const bf = `bare Fastify, same /feed bytes, ${connections} conn`;
    await bench.load(bf, bare, { ...load, path: "/api/v1/feed" });
    rows.push(
      await bench.load(`GET /feed (30 items), ${connections} conn`, gallery, {
        ...load,
        path: "/api/v1/feed",
        baseline: bf,
      }),
    );
    const bd = `bare Fastify, same /feed/delta bytes, ${connections} conn`;
    await bench.load(bd, bare, { ...load, path: deltaPath });
    rows.push(
      await bench.load(`GET /feed/delta (~60 new), ${connections} conn`, gallery, {
        ...load,
        path: deltaPath,
        baseline: bd,
      }),
    );
  }
  rows.push(
    await bench.load("GET /me/context, 200 conn", gallery, {
      connections: 200,
      duration: 5,
      headers: auth,
      path: "/api/v1/me/context",
      baseline: "bare Fastify, same /feed bytes, 200 conn",
    }),
  );
  for (const r of rows)
    if (r.non2xx + r.errors > 0) bench.note(`${r.label}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  await bare.stop();
}

if (parts.has("sse")) {
  // 4. SSE fan-out: one bus event to 1,000 subscribers (40 guests × 25 streams: the ticket endpoint
  // allows 30 per guest per minute). Subscribers in their own process; latency = arrival (wall
  // clock in the subscriber process) − publish time (wall clock in the server process).
  const tokens: string[] = [];
  for (let u = 0; u < 40; u++) tokens.push(await joinGuest(`Watcher ${u}`));
  const sse = bench.task<number>(clients, "sseSubscribers", {
    url: gallery.url,
    tokens,
    streamsPerGuest: 25,
  });
  await sse.next(); // all streams open
  const rounds: { p50: number; p99: number; max: number }[] = [];
  let missing = 0;
  const sseCpu0 = await gallery.cpuSeconds();
  for (let round = 0; round < 5; round++) {
    sse.send({ mark: `bench-mark-${round}` });
    await sse.next(); // armed
    const sentAt = await gallery.call<number>("publish", `bench-mark-${round}`);
    const { arrivals } = (await sse.next()) as { arrivals: number[] };
    const lat = arrivals.map((a) => a - sentAt).sort((a, b) => a - b);
    missing += tokens.length * 25 - lat.length;
    rounds.push({
      p50: percentile(lat, 50),
      p99: percentile(lat, 99),
      max: lat[lat.length - 1] ?? Number.NaN,
    });
  }
  const sseCpuMs = (((await gallery.cpuSeconds()) - sseCpu0) * 1000) / 5;
  sse.send({ done: true });
  const streams = (await sse.result).value;
  const note = `${streams} subscribers; server CPU ${sseCpuMs.toFixed(1)} ms per event${missing > 0 ? `; ${missing} deliveries MISSING` : ""}`;
  bench.figure({
    label: "SSE fan-out p50 (median of 5 events)",
    value: median(rounds.map((r) => r.p50)),
    unit: "ms",
    note,
  });
  bench.figure({
    label: "SSE fan-out p99 (median of 5 events)",
    value: median(rounds.map((r) => r.p99)),
    unit: "ms",
  });
  bench.figure({
    label: "SSE fan-out max (median of 5 events)",
    value: median(rounds.map((r) => r.max)),
    unit: "ms",
  });
}

await bench.finish([gallery]);
