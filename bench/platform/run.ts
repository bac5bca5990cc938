// Script-platform figures (issue 10 item 8):
// - requests/s, p50, p99 and server CPU per request of a hello-world script route (sync, through
//   the outbox) against bare Fastify serving the same bytes: each server in its own process,
//   autocannon in its own, same connections; on SQLite, and on PostgreSQL when DATABASE_URL is set;
// - isolation: p99 of /healthz and of this app's hello route while another app runs two hogs;
// - trigger runs/s (publishDurable → triggered script ran) on SQLite and, with DATABASE_URL, on
//   PostgreSQL (bench/platform-async's target);
// - the first call of a newly saved script against its second call.
// The machine's load average is printed with every step: other work on the machine skews figures.
// About two minutes. BENCH_N sets the trigger job count (default 600); PLATFORM_BENCH_STEPS
// (comma-separated: hello, isolation, first, triggers; default all) picks the steps.
import { readdirSync, readFileSync } from "node:fs";
import { request } from "node:http";
import { loadavg } from "node:os";
import { median, startBench } from "../harness/index.js";
import { measure, SINGLE, withDatabase } from "../platform-async/measure.js";

const DURATION_S = 10;
const CONNECTIONS = 32;
const HOST = "bench.test";
const TRIGGER_JOBS = Number(process.env.BENCH_N ?? 600);
const pgUrl = process.env.DATABASE_URL;
const steps = new Set((process.env.PLATFORM_BENCH_STEPS ?? "hello,isolation,first,triggers").split(","));

const bench = startBench(
  "platform",
  "hello-world script route vs bare Fastify, isolation under hogs, trigger runs/s, first call of a new script",
);
const load = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
const step = (what: string) => bench.note(`load average ${load()} (1/5/15 min) after ${what}`);

/**
 * CPU seconds used so far by the PostgreSQL server processes on this machine (0 when it runs
 * elsewhere): it shares the cores with the platform, so its cost per run belongs to the figure.
 * Other clients of the same server count too (a busy machine inflates it).
 */
function postgresCpuSeconds(): number {
  let ticks = 0;
  for (const pid of readdirSync("/proc")) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      if (!stat.includes("(postgres)")) continue;
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      // utime, stime, and cutime, cstime: the postmaster's ended backends (the target's pool
      // closes before the second reading) count there.
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      // the process ended meanwhile
    }
  }
  return ticks / 100; // USER_HZ
}

// Trigger runs: publishDurable from inside the server process → the triggered script ran.
// PLATFORM_BENCH_STEPS=triggers runs only this step (about 20 s).
async function triggerStep() {
  const targets = new URL("../platform-async/targets.ts", import.meta.url);
  const sqlite = await measure(
    await bench.server("triggers (SQLite)", targets, "startPlatformAsync", {}),
    TRIGGER_JOBS,
  );
  bench.figure({
    label: "trigger runs/s on SQLite",
    value: sqlite.burst.perSecond,
    unit: "runs/s",
    note: `${TRIGGER_JOBS} jobs, server CPU ${sqlite.cpuMsPerJob.toFixed(3)} ms/run, p99 ${sqlite.burst.p99} ms`,
  });
  step("the trigger runs on SQLite");
  if (pgUrl) {
    let pgCpu = 0;
    const pg = await withDatabase(pgUrl, async (databaseUrl) => {
      const server = await bench.server("triggers (PostgreSQL)", targets, "startPlatformAsync", {
        databaseUrl,
      });
      const cpu0 = postgresCpuSeconds();
      const m = await measure(server, TRIGGER_JOBS);
      pgCpu = postgresCpuSeconds() - cpu0;
      return m;
    });
    bench.figure({
      label: "trigger runs/s on PostgreSQL",
      value: pg.burst.perSecond,
      unit: "runs/s",
      baseline: { label: "SQLite", value: sqlite.burst.perSecond },
      note: `server CPU ${pg.cpuMsPerJob.toFixed(3)} ms/run${pgCpu > 0 ? ` + PostgreSQL's ${((pgCpu * 1000) / (TRIGGER_JOBS + SINGLE)).toFixed(3)} ms/run` : ""}, p99 ${pg.burst.p99} ms`,
    });
    bench.note(
      `target: trigger runs/s on PostgreSQL >= SQLite's: ${pg.burst.perSecond >= sqlite.burst.perSecond ? "met" : "NOT met"}`,
    );
    step("the trigger runs on PostgreSQL");
  }
}

if (process.env.PLATFORM_BENCH_STEPS === "triggers") {
  step("start");
  await triggerStep();
  await bench.finish();
  process.exit(0);
}

const platform = await bench.server("platform", new URL("./target.ts", import.meta.url), "startPlatform", {
  backend: "sqlite",
});
await platform.call("save", { name: "hello", path: "/hello" });

// node:http rather than fetch: the Host header selects the app and fetch will not send one.
const get = (path: string) =>
  new Promise<{ ms: number; body: string; type: string }>((resolve, reject) => {
    const t0 = performance.now();
    const req = request(`${platform.url}${path}`, { headers: { host: HOST } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => {
        body += d;
      });
      res.on("end", () => {
        if (res.statusCode !== 200) reject(new Error(`${path}: ${res.statusCode} ${body}`));
        else resolve({ ms: performance.now() - t0, body, type: String(res.headers["content-type"]) });
      });
    });
    req.on("error", reject);
    req.end();
  });

// The baseline serves exactly the bytes the script route answers.
const sample = await get("/hello");
const bare = await bench.server("bare Fastify", new URL("../harness/bare.ts", import.meta.url), "startBare", {
  routes: [{ path: "/hello", body: sample.body, contentType: sample.type }],
});

// Each server gets 3 s of the same load first (JIT, pools, warm contexts), then is measured.
const hello = {
  path: "/hello",
  connections: CONNECTIONS,
  duration: DURATION_S,
  warmup: 3000,
  headers: { host: HOST },
};
await bench.load("bare Fastify, same bytes", bare, hello);
const s = await bench.load("script route on SQLite (sync, outbox)", platform, {
  ...hello,
  baseline: "bare Fastify, same bytes",
});
if (s.non2xx + s.errors > 0) bench.note(`script route: ${s.non2xx} non-2xx, ${s.errors} errors`);
bench.note(
  `target: script route >= 0.25 of bare Fastify requests/s (long-run goal 0.5): ${(s.ratio ?? 0).toFixed(3)} → ${(s.ratio ?? 0) >= 0.25 ? "met" : "NOT met"}`,
);
step("the hello route on SQLite");

if (pgUrl) {
  const onPg = await bench.server(
    "platform (PostgreSQL)",
    new URL("./target.ts", import.meta.url),
    "startPlatform",
    { backend: "postgres" },
  );
  await onPg.call("save", { name: "hello", path: "/hello" });
  const p = await bench.load("script route on PostgreSQL (sync, outbox)", onPg, {
    ...hello,
    baseline: "bare Fastify, same bytes",
  });
  if (p.non2xx + p.errors > 0)
    bench.note(`script route on PostgreSQL: ${p.non2xx} non-2xx, ${p.errors} errors`);
  await onPg.stop();
  step("the hello route on PostgreSQL");
} else bench.note("DATABASE_URL unset: the PostgreSQL rows are skipped");

// Isolation: p99 of /healthz and of this app's hello route while another app runs two hog
// scripts back to back (each spins until its timeout ends it; the hog app may hold at most
// PLATFORM_APP_CONCURRENCY workers, so its second hog queues or gets 503).
if (steps.has("isolation")) {
  await platform.call("hog", {
    name: "spin",
    path: "/spin",
    source: "export default function () { for (;;) {} }",
    timeout_seconds: 5,
  });
  let hogging = true;
  let hogRuns = 0;
  const hogLoop = async () => {
    while (hogging) {
      await new Promise<void>((resolve) => {
        const req = request(`${platform.url}/spin`, { headers: { host: "hogs.test" } }, (res) => {
          res.resume();
          res.on("end", () => {
            hogRuns++;
            resolve();
          });
        });
        req.on("error", () => resolve());
        req.end();
      });
    }
  };
  const hogs = [hogLoop(), hogLoop()];
  await new Promise((r) => setTimeout(r, 500));
  const iso = { connections: 8, duration: 8 };
  const hz = await bench.load("/healthz while another app runs 2 hogs", platform, {
    ...iso,
    path: "/healthz",
  });
  const hh = await bench.load("hello route while another app runs 2 hogs", platform, {
    ...iso,
    path: "/hello",
    headers: { host: HOST },
    baseline: "script route on SQLite (sync, outbox)",
  });
  hogging = false;
  await Promise.all(hogs);
  bench.note(`hog requests answered during the isolation runs: ${hogRuns}`);
  bench.note(
    `isolation target p99 < 50 ms: /healthz ${hz.p99Ms} ms, hello ${hh.p99Ms} ms → ${Math.max(hz.p99Ms, hh.p99Ms) < 50 ? "met" : "NOT met"}`,
  );
  step("the isolation runs");
}

// First call of a newly saved script (import-list parse, module cache miss) vs its next call,
// one request at a time from this (otherwise idle) orchestrator process.
if (steps.has("first")) {
  const firsts: number[] = [];
  const warm: number[] = [];
  for (let i = 0; i < 15; i++) {
    await platform.call("save", { name: `fresh${i}`, path: `/fresh${i}` });
    firsts.push((await get(`/fresh${i}`)).ms);
    warm.push((await get(`/fresh${i}`)).ms);
  }
  bench.figure({
    label: "first call of a newly saved script (median of 15)",
    value: median(firsts),
    unit: "ms",
    baseline: { label: "second call", value: median(warm) },
  });
}

await platform.stop();
await bare.stop();

if (steps.has("triggers")) await triggerStep();
await bench.finish();
