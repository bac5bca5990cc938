// Event-gallery figures: /feed and /feed/delta under 10 and 200 concurrent clients vs bare
// Fastify serving the same bytes, a burst of 50 12-megapixel photos (time to the last 201 and to
// the last thumbnail), and on request upload ingest, 24 MP derivatives and SSE fan-out. The gallery,
// the baseline and every client run in their own processes (bench/harness).
//
// Backends: SQLite always; PostgreSQL as well when DATABASE_URL is set (a server where the bench
// may create databases). Each backend run gets its own fresh database and data directory.
// The live part (issue 27) reads /feed and /feed/delta as 300 guests at 300 connections with and
// without 20 like/unlike per second running (the likes from their own client process).
// GALLERY_BENCH_PARTS (comma-separated: feed, live, burst, ingest, render, sse; default
// feed,live,burst)
// selects parts; GALLERY_BENCH_BACKENDS=sqlite|postgres narrows the backends;
// GALLERY_BENCH_PROFILE=<dir> writes a CPU profile of the server during /feed at 200 connections.
import { join, resolve } from "node:path";
import { type LoadFigures, median, percentile, type ServerProc, startBench } from "../harness/index.js";

const MiB = 1024 * 1024;
const UPLOAD_BYTES = 128 * MiB;
const BURST = 50;
const VIEWERS = 300; // guests who open the feed (issue 12: "300 open the feed")
const LIKES_PER_SECOND = 20; // issue 27: likes never stop at a party
const LIKERS = 30; // the social bucket allows 120 writes per minute per guest
const clients = new URL("./clients.ts", import.meta.url);
const parts = new Set((process.env.GALLERY_BENCH_PARTS ?? "feed,live,burst").split(","));
const backends = (
  process.env.GALLERY_BENCH_BACKENDS ?? (process.env.DATABASE_URL ? "sqlite,postgres" : "sqlite")
).split(",") as ("sqlite" | "postgres")[];
const profileDir = process.env.GALLERY_BENCH_PROFILE ? resolve(process.env.GALLERY_BENCH_PROFILE) : null;

const bench = startBench("gallery", `/feed and /feed/delta under load, 12 MP burst (${backends.join(", ")})`);
const feed200 = new Map<string, LoadFigures>();

for (const backend of backends) {
  const gallery = await bench.server(
    `event-gallery (${backend})`,
    new URL("./target.ts", import.meta.url),
    "startGallery",
    { backend },
  );
  await runParts(gallery, backend);
  await gallery.stop();
}

const sqlite = feed200.get("sqlite");
const postgres = feed200.get("postgres");
if (sqlite && postgres)
  bench.figure({
    label: "PostgreSQL /feed req/s at 200 conn, relative to SQLite",
    value: postgres.reqPerSec,
    unit: "req/s",
    baseline: { label: "SQLite", value: sqlite.reqPerSec },
  });

await bench.finish();

async function runParts(gallery: ServerProc, backend: string): Promise<void> {
  const tag = backend === "sqlite" ? "SQLite" : "PG";
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

  if (parts.has("ingest")) {
    // 1. Ingest: streamed multipart uploads (client in its own process) vs a plain stream copy of the
    // same bytes to the same folder (also its own process). Server CPU per upload from the OS.
    const plain = await bench.task<number[]>(clients, "plainCopies", {
      dir: gallery.info.originals as string,
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
      label: `${tag} upload ingest, ${UPLOAD_BYTES / MiB} MiB (median of 3)`,
      value: mbps(median(ingest.value)),
      unit: "MiB/s",
      baseline: { label: "plain stream copy + fsync", value: mbps(median(plain.value)) },
      note: `server CPU ${uploadCpuMs.toFixed(0)} ms per upload`,
    });
  }

  if (parts.has("render")) {
    // 2. Derivatives of a 24-megapixel JPEG, in a process of its own.
    const render = await bench.task<{ ms: number; bytes: number }>(clients, "renderBig", {
      dir: gallery.info.dataDir as string,
    }).result;
    bench.figure({
      label: `${tag} derivatives, 24 MP JPEG (${(render.value.bytes / MiB).toFixed(1)} MiB), median of 3`,
      value: render.value.ms,
      unit: "ms",
    });
  }

  // 3. /feed and /feed/delta at 10 and 200 connections over the wedding of issue 12 (1,000 uploads,
  // 5,000 likes, 300 guests), each against bare Fastify serving the same bytes in the same run;
  // /me/context (auth + one small query) separates the per-request cost of auth from the feed's.
  // The connections speak for 300 signed-in guests in turn, as at a wedding: per-viewer limits,
  // sessions and liked_by_me see many viewers, not one token at 10,000 req/s (which its own
  // feed rate limit answers with 429).
  const viewers: Record<string, string>[] = [];
  if (parts.has("feed") || parts.has("live")) {
    await gallery.call("seedFeed", { users: 300 });
    for (let i = 0; i < VIEWERS; i++)
      viewers.push({ authorization: `Bearer ${await joinGuest(`Bench Guest ${i + 1}`)}` });
  }
  if (parts.has("feed")) {
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
      `${tag}: /feed page ${feedBody.length} bytes (30 items); /feed/delta ${deltaBody.length} bytes (${delta.items.length} new items)`,
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
      const load = { connections, duration: connections >= 200 ? 10 : 5, headerSets: viewers };
      const bf = `${tag} bare, same /feed bytes, ${connections} conn`;
      await bench.load(bf, bare, { ...load, path: "/api/v1/feed" });
      const profile = profileDir && connections >= 200;
      const pool0 = await gallery.call<{ waits: number; waitSeconds: number }>("poolStats");
      if (profile) await gallery.call("profileStart");
      const feedRow = await bench.load(`${tag} GET /feed (30 items), ${connections} conn`, gallery, {
        ...load,
        path: "/api/v1/feed",
        baseline: bf,
      });
      if (profile)
        bench.note(
          `CPU profile: ${await gallery.call("profileStop", join(profileDir, `feed-${backend}.cpuprofile`))}`,
        );
      if (connections >= 200) feed200.set(backend, feedRow);
      const pool1 = await gallery.call<{ waits: number; waitSeconds: number }>("poolStats");
      const waits = pool1.waits - pool0.waits;
      bench.note(
        `${tag} /feed at ${connections} conn: ${waits} waits for a pooled connection${waits > 0 ? ` (mean ${(((pool1.waitSeconds - pool0.waitSeconds) / waits) * 1000).toFixed(1)} ms)` : ""}`,
      );
      rows.push(feedRow);
      const bd = `${tag} bare, same /feed/delta bytes, ${connections} conn`;
      await bench.load(bd, bare, { ...load, path: deltaPath });
      rows.push(
        await bench.load(`${tag} GET /feed/delta (~60 new), ${connections} conn`, gallery, {
          ...load,
          path: deltaPath,
          baseline: bd,
        }),
      );
    }
    rows.push(
      await bench.load(`${tag} GET /me/context, 200 conn`, gallery, {
        connections: 200,
        duration: 5,
        headerSets: viewers,
        path: "/api/v1/me/context",
        baseline: `${tag} bare, same /feed bytes, 200 conn`,
      }),
    );
    for (const r of rows)
      if (r.non2xx + r.errors > 0) bench.note(`${r.label}: ${r.non2xx} non-2xx, ${r.errors} errors`);
    await bare.stop();
  }

  if (parts.has("live")) {
    // 4. A live party (issue 27): 300 guests read /feed (their first page) and /feed/delta (a
    // cursor a minute behind the newest upload: ~60 new items) at 300 connections, first quiet,
    // then with LIKES_PER_SECOND like/unlike requests on the first page's uploads running from
    // their own process. Quiet and busy rows come from the same run, back to back.
    const auth = { authorization: `Bearer ${uploader}` };
    const first = (await (await fetch(`${base}/feed`, { headers: auth })).json()) as {
      items: { id: string; created_at: string }[];
    };
    const newest = Date.parse(first.items[0]?.created_at ?? new Date().toISOString());
    const cursor = Buffer.from(JSON.stringify([new Date(newest - 60_000).toISOString(), ""])).toString(
      "base64url",
    );
    const deltaPath = `/api/v1/feed/delta?cursor=${cursor}`;
    const likers: string[] = [];
    for (let i = 0; i < LIKERS; i++) likers.push(await joinGuest(`Bench Liker ${i + 1}`));
    const load = { connections: 300, duration: 10, headerSets: viewers };
    const quietFeed = `${tag} live: GET /feed, 300 guests, quiet`;
    const q = await bench.load(quietFeed, gallery, { ...load, path: "/api/v1/feed" });
    const d = await bench.load(`${tag} live: GET /feed/delta (~60 new), 300 guests, quiet`, gallery, {
      ...load,
      path: deltaPath,
      baseline: quietFeed,
    });
    // A phone catching up after a live event: its cursor a few seconds behind the newest upload.
    const recent = Buffer.from(JSON.stringify([new Date(newest - 5_000).toISOString(), ""])).toString(
      "base64url",
    );
    const dRecent = await bench.load(`${tag} live: GET /feed/delta (~5 new), 300 guests, quiet`, gallery, {
      ...load,
      path: `/api/v1/feed/delta?cursor=${recent}`,
      baseline: quietFeed,
    });
    const likes = bench.task<{ sent: number; ok: number; failed: number; seconds: number }>(
      clients,
      "reactions",
      {
        url: gallery.url,
        tokens: likers,
        ids: first.items.map((i) => i.id),
        perSecond: LIKES_PER_SECOND,
      },
    );
    await likes.next();
    // The likes' own server CPU (they run in the same process): measured alone, so the busy rows'
    // CPU per request can be read apart from it.
    const likesCpu0 = await gallery.cpuSeconds();
    const likesT0 = performance.now();
    await new Promise((r) => setTimeout(r, 5_000));
    const likesCpuMsPerS =
      (((await gallery.cpuSeconds()) - likesCpu0) * 1000) / ((performance.now() - likesT0) / 1000);
    bench.figure({
      label: `${tag} live: server CPU of ${LIKES_PER_SECOND} likes/s alone`,
      value: likesCpuMsPerS,
      unit: "ms CPU/s",
    });
    const busy = await bench.load(
      `${tag} live: GET /feed, 300 guests, ${LIKES_PER_SECOND} likes/s`,
      gallery,
      {
        ...load,
        path: "/api/v1/feed",
        baseline: quietFeed,
      },
    );
    const busyDelta = await bench.load(
      `${tag} live: GET /feed/delta, 300 guests, ${LIKES_PER_SECOND} likes/s`,
      gallery,
      { ...load, path: deltaPath, baseline: quietFeed },
    );
    likes.send("stop");
    const r = (await likes.result).value;
    bench.note(
      `${tag} live: ${r.ok} likes/unlikes answered 200 (${(r.ok / r.seconds).toFixed(1)}/s), ${r.failed} failed, over ${r.seconds.toFixed(0)} s`,
    );
    bench.note(
      `${tag} live: /feed busy/quiet ${(busy.reqPerSec / q.reqPerSec).toFixed(2)} (target >= 0.8), busy p99/p50 ${(busy.p99Ms / busy.p50Ms).toFixed(1)} (target <= 4); /feed/delta quiet / /feed quiet ${(d.reqPerSec / q.reqPerSec).toFixed(2)} (~60 new), ${(dRecent.reqPerSec / q.reqPerSec).toFixed(2)} (~5 new) (target >= 0.9); delta busy/quiet ${(busyDelta.reqPerSec / d.reqPerSec).toFixed(2)}`,
    );
    for (const row of [q, d, dRecent, busy, busyDelta])
      if (row.non2xx + row.errors > 0)
        bench.note(`${row.label}: ${row.non2xx} non-2xx, ${row.errors} errors`);
  }

  if (parts.has("burst")) {
    // 5. The burst after the ceremony: 50 uploads of a 12 MP photo at once (10 guests, 5 each, one
    // client process), with the derivative worker running. Time to the last 201, and to the last
    // thumbnail (when its row first had one, seen in the server).
    const tokens: string[] = [];
    for (let u = 0; u < 10; u++) tokens.push(await joinGuest(`Burst guest ${u}`));
    await gallery.call("startWorkers");
    await gallery.call("watchThumbnails");
    const cpu0 = await gallery.cpuSeconds();
    const burst = await bench.task<{ startedAt: number; bytes: number; done: { id: string; at: number }[] }>(
      clients,
      "burstUploads",
      { url: gallery.url, tokens, dir: gallery.info.dataDir as string, count: BURST },
    ).result;
    const { startedAt, done, bytes } = burst.value;
    const times = await gallery.call<Record<string, number | null>>("thumbnailTimes", {
      ids: done.map((d) => d.id),
      timeoutMs: 300_000,
    });
    const cpuS = (await gallery.cpuSeconds()) - cpu0;
    const last201 = Math.max(...done.map((d) => d.at)) - startedAt;
    const thumbs = done.map((d) => times[d.id] ?? null);
    const missing = thumbs.filter((t) => t === null).length;
    const lastThumb = Math.max(...thumbs.map((t) => t ?? Number.NaN)) - startedAt;
    const lags = done
      .map((d, i) => (thumbs[i] ?? Number.NaN) - d.at)
      .filter(Number.isFinite)
      .sort((a, b) => a - b);
    const note = `${BURST} × ${(bytes / MiB).toFixed(1)} MiB JPEG; server CPU ${cpuS.toFixed(1)} s`;
    bench.figure({ label: `${tag} burst: last 201 after start`, value: last201 / 1000, unit: "s", note });
    bench.figure({
      label: `${tag} burst: last thumbnail after start`,
      value: lastThumb / 1000,
      unit: "s",
      note: missing > 0 ? `${missing} thumbnails MISSING after 300 s` : "",
    });
    bench.figure({
      label: `${tag} burst: thumbnail after its 201, p50 / max`,
      value: percentile(lags, 50) / 1000,
      unit: "s",
      note: `max ${((lags.at(-1) ?? Number.NaN) / 1000).toFixed(1)} s (target: every thumbnail within 30 s of its 201)`,
    });
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
      label: `${tag} SSE fan-out p50 (median of 5 events)`,
      value: median(rounds.map((r) => r.p50)),
      unit: "ms",
      note,
    });
    bench.figure({
      label: `${tag} SSE fan-out p99 (median of 5 events)`,
      value: median(rounds.map((r) => r.p99)),
      unit: "ms",
    });
    bench.figure({
      label: `${tag} SSE fan-out max (median of 5 events)`,
      value: median(rounds.map((r) => r.max)),
      unit: "ms",
    });
  }
}
