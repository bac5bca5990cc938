// The platform's `parked` step (issue 29 item 1): N concurrent requests (default 200) to one app's
// sync route whose handler awaits a `fetch` of a local upstream that answers after 500 ms. The
// upstream runs in its own process, the N clients in their own (bench.task), the platform in its
// own, with real HTTP between them. Baseline in the same run: Cloudflare's workerd running a worker
// that makes the same fetch to the same upstream, with the same clients. Rounds alternate the
// order of the two; figures are medians over the rounds. Target: all N answer 200, the last within
// 2 s of the burst's start. Figures are taken after warm-up bursts (steady state); the first
// (cold) burst's last answer is noted apart.
// This module is also the upstream's server target and the clients' task (both exported below).
import { type Agent, createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { loadavg } from "node:os";
import type { Bench, ServerProc, ServerTarget, TaskIo } from "../harness/index.js";
import { median, percentile, wallMs } from "../harness/index.js";

const UPSTREAM_DELAY_MS = 500;
const HOST = "parked.test";

/** The slow upstream: every answer `delayMs` after its request; counts requests open at once. */
export async function startUpstream(args: { delayMs: number }): Promise<ServerTarget> {
  let open = 0;
  let maxOpen = 0;
  let first = 0;
  let last = 0;
  const server = createServer((req, res) => {
    last = performance.now();
    if (first === 0) first = last;
    open++;
    maxOpen = Math.max(maxOpen, open);
    setTimeout(() => {
      open--;
      res.end(`upstream ${req.url}`);
    }, args.delayMs);
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    commands: {
      /**
       * Since the previous call: the most requests open at once, and the milliseconds from the
       * first request's arrival to the last's (how long the target took to start them all).
       */
      stats: () => {
        const m = { maxOpen, spreadMs: last - first };
        maxOpen = open;
        first = 0;
        last = 0;
        return m;
      },
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

export interface BurstResult {
  /** Answers by status ("error" for a failed connection). */
  statuses: Record<string, number>;
  /** Milliseconds from the burst's start to each answer, ascending. */
  ms: number[];
}

/**
 * The clients: `n` requests at once, each on its own connection, once the orchestrator says go
 * (it reads the server's CPU counter in between).
 */
export async function burst(
  args: { url: string; host?: string; n: number },
  io: TaskIo,
): Promise<BurstResult> {
  await io.send("ready");
  await io.next();
  const t0 = wallMs();
  const statuses: Record<string, number> = {};
  const count = (k: string) => {
    statuses[k] = (statuses[k] ?? 0) + 1;
  };
  const ms = await Promise.all(
    Array.from(
      { length: args.n },
      (_, i) =>
        new Promise<number>((resolve) => {
          const req = request(
            `${args.url}?n=${i}`,
            { agent: false as unknown as Agent, headers: args.host ? { host: args.host } : {} },
            (res) => {
              res.resume();
              res.on("end", () => {
                count(String(res.statusCode));
                resolve(wallMs() - t0);
              });
            },
          );
          req.on("error", () => {
            count("error");
            resolve(wallMs() - t0);
          });
          req.end();
        }),
    ),
  );
  return { statuses, ms: ms.sort((a, b) => a - b) };
}

interface Round {
  ok: number;
  statuses: Record<string, number>;
  lastMs: number;
  p50: number;
  p99: number;
  cpuMs: number;
  upstreamOpen: number;
  upstreamSpreadMs: number;
  load: string;
  /** The platform's main thread's CPU ms in the burst, and its other threads' (busiest first). */
  mainMs: number;
  threadsMs: number[];
}

type ThreadCpu = { tid: number; main: boolean; cpuS: number }[];

/**
 * The step: starts the upstream, a platform target allowed to fetch loopback, workerd with the
 * fetching worker; a warm-up burst on each, then `rounds` measured bursts per side, alternating.
 */
export async function parkedStep(
  bench: Bench,
  opts: {
    n?: number;
    rounds?: number;
    /** Bursts per side before the measured rounds. */
    warmups?: number;
    /** Platform targets to measure (more than one: an A/B of trees, e.g. a base commit's). */
    platforms: { name: string; module: URL; env?: Record<string, string> }[];
    workerdModule: URL;
  },
): Promise<void> {
  const n = opts.n ?? 200;
  const rounds = opts.rounds ?? 5;
  const warmups = opts.warmups ?? 4;
  const upstream = await bench.server("upstream (500 ms)", new URL(import.meta.url), "startUpstream", {
    delayMs: UPSTREAM_DELAY_MS,
  });
  const fetchUrl = JSON.stringify(`${upstream.url}/r`);
  const sides: { name: string; target: ServerProc; url: string; host?: string; rounds: Round[] }[] = [];
  for (const p of opts.platforms) {
    const target = await bench.server(p.name, p.module, "startPlatform", {
      backend: "sqlite",
      // The platform's default slots (the other steps use 64): what an instance meets as shipped.
      env: { PLATFORM_HTTP_ALLOW_PRIVATE: "true", PLATFORM_MAX_CONCURRENCY: "32", ...p.env },
    });
    await target.call("hog", {
      app: "parked",
      name: "proxy",
      path: "/p",
      timeout_seconds: 30,
      source: `export default async (ctx) => {
  const r = await fetch(${fetchUrl} + "?n=" + ctx.request.query.n);
  return { statusCode: 200, body: { got: await r.text() } };
}`,
    });
    sides.push({ name: p.name, target, url: `${target.url}/p`, host: HOST, rounds: [] });
  }
  const workerd = await bench.server("workerd (parked)", opts.workerdModule, "startWorkerd", {
    worker: `export default { async fetch(req) {
  const n = new URL(req.url).searchParams.get("n");
  const r = await fetch(${fetchUrl} + "?n=" + n);
  return Response.json({ got: await r.text() });
} };`,
    network: true,
  });
  const peer = { name: "workerd", target: workerd, url: `${workerd.url}/p`, rounds: [] as Round[] };
  sides.push(peer);
  const once = async (side: (typeof sides)[number]): Promise<Round> => {
    const task = bench.task<BurstResult>(new URL(import.meta.url), "burst", {
      url: side.url,
      host: side.host,
      n,
    });
    await task.next();
    await upstream.call("stats");
    const platform = side !== peer;
    const t0 = platform ? await side.target.call<ThreadCpu>("threads") : [];
    const cpu0 = await side.target.cpuSeconds();
    task.send("go");
    const { value } = await task.result;
    const cpuMs = ((await side.target.cpuSeconds()) - cpu0) * 1000;
    const t1 = platform ? await side.target.call<ThreadCpu>("threads") : [];
    const before = new Map(t0.map((t) => [t.tid, t.cpuS]));
    const delta = t1.map((t) => ({ ...t, cpuS: t.cpuS - (before.get(t.tid) ?? 0) }));
    return {
      ok: value.statuses["200"] ?? 0,
      statuses: value.statuses,
      lastMs: value.ms[value.ms.length - 1] ?? Number.NaN,
      p50: percentile(value.ms, 50),
      p99: percentile(value.ms, 99),
      cpuMs,
      ...(await upstream
        .call<{ maxOpen: number; spreadMs: number }>("stats")
        .then((u) => ({ upstreamOpen: u.maxOpen, upstreamSpreadMs: u.spreadMs }))),
      load: loadavg()[0]?.toFixed(2) ?? "-",
      mainMs: (delta.find((t) => t.main)?.cpuS ?? 0) * 1000,
      threadsMs: delta
        .filter((t) => !t.main && t.cpuS > 0)
        .map((t) => t.cpuS * 1000)
        .sort((a, b) => b - a),
    };
  };
  const fmt = (x: number) => x.toFixed(0);
  // The first bursts on each side warm up, not counted: contexts, the JIT (V8 tiers QuickJS's
  // WebAssembly up on its helper threads for several bursts), the upstream's connections. The
  // first one's last answer is noted: what a cold instance's first burst meets.
  const cold: string[] = [];
  for (const s of sides) {
    const r = await once(s);
    cold.push(`${s.name} ${fmt(r.lastMs)} ms (${r.ok} of ${n} 200)`);
    for (let i = 1; i < warmups; i++) await once(s);
  }
  bench.note(`parked: the first (cold) burst's last answer: ${cold.join(", ")}`);
  for (let r = 0; r < rounds; r++)
    for (const s of r % 2 === 0 ? sides : [...sides].reverse()) s.rounds.push(await once(s));

  const med = (rs: Round[], f: (r: Round) => number) => median(rs.map(f));
  for (const s of sides) {
    const other = s.rounds.flatMap((r) => Object.entries(r.statuses).filter(([k]) => k !== "200"));
    const non200 = new Map<string, number>();
    for (const [k, v] of other) non200.set(k, (non200.get(k) ?? 0) + v);
    bench.figure({
      label: `parked: ${n} concurrent, 500 ms upstream fetch, last answer, ${s.name}`,
      value: med(s.rounds, (r) => r.lastMs),
      unit: "ms",
      ...(s === peer ? {} : { baseline: { label: "workerd", value: med(peer.rounds, (r) => r.lastMs) } }),
      note: `median of ${rounds} rounds; 200s per round ${s.rounds.map((r) => r.ok).join(", ")} of ${n}${non200.size > 0 ? ` (non-200 in all: ${[...non200].map(([k, v]) => `${k} x${v}`).join(", ")})` : ""}; last ${s.rounds.map((r) => fmt(r.lastMs)).join(", ")} ms; p50 ${fmt(med(s.rounds, (r) => r.p50))}, p99 ${fmt(med(s.rounds, (r) => r.p99))} ms; server CPU ${(med(s.rounds, (r) => r.cpuMs) / n).toFixed(3)} ms/request (${fmt(med(s.rounds, (r) => r.cpuMs))} ms per burst); upstream saw up to ${Math.max(...s.rounds.map((r) => r.upstreamOpen))} open at once, its requests arriving over ${fmt(med(s.rounds, (r) => r.upstreamSpreadMs))} ms;${s === peer ? "" : ` CPU ms per burst on the main thread ${fmt(med(s.rounds, (r) => r.mainMs))}, other threads (busiest first, median round) ${(s.rounds.slice().sort((a, b) => a.cpuMs - b.cpuMs)[Math.floor(rounds / 2)]?.threadsMs ?? []).map(fmt).join(" + ")};`} load average (1 min) per round ${s.rounds.map((r) => r.load).join(", ")}`,
    });
  }
  for (const s of sides.filter((x) => x !== peer)) {
    const allOk = s.rounds.every((r) => r.ok === n);
    const last = med(s.rounds, (r) => r.lastMs);
    bench.note(
      `parked target (all ${n} answer 200, the last within 2000 ms), ${s.name}: ${s.rounds.filter((r) => r.ok === n).length} of ${rounds} rounds all 200, median last ${fmt(last)} ms → ${allOk && last <= 2000 ? "met" : "NOT met"}; workerd's median last ${fmt(med(peer.rounds, (r) => r.lastMs))} ms`,
    );
  }
  for (const s of sides) await s.target.stop();
  await upstream.stop();
}
