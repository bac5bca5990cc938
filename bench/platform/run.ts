// Script-platform figures: requests/s, latency and server CPU per request of a hello-world
// script route vs bare Fastify serving the same bytes, and the cost of the first call of a newly
// saved script. Each server in its own process, autocannon in its own (bench/harness). SQLite, or
// PostgreSQL with TEST_BACKEND=postgres and DATABASE_URL. About a minute.
import { request } from "node:http";
import { median, startBench } from "../harness/index.js";

const DURATION_S = 10;
const CONNECTIONS = 32;
const HOST = "bench.test";

const bench = startBench("platform", "hello-world script route vs bare Fastify, first call of a new script");
const platform = await bench.server("platform", new URL("./target.ts", import.meta.url), "startPlatform");
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

const load = { path: "/hello", connections: CONNECTIONS, duration: DURATION_S, headers: { host: HOST } };
await bench.load("bare Fastify, same bytes", bare, load);
const s = await bench.load("script route (sync, outbox)", platform, {
  ...load,
  baseline: "bare Fastify, same bytes",
});
if (s.non2xx + s.errors > 0) bench.note(`script route: ${s.non2xx} non-2xx, ${s.errors} errors`);
bench.note(
  `target: script route >= 0.5 of bare Fastify requests/s: ${(s.ratio ?? 0) >= 0.5 ? "met" : "NOT met"}`,
);

// Isolation: p99 of /healthz and of this app's hello route while another app runs two hog
// scripts back to back (each spins until its operation budget or timeout ends it; the hog app
// may hold at most PLATFORM_APP_CONCURRENCY workers, so its second hog queues or gets 503).
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
const hz = await bench.load("/healthz while another app runs 2 hogs", platform, { ...iso, path: "/healthz" });
const hh = await bench.load("hello route while another app runs 2 hogs", platform, {
  ...iso,
  path: "/hello",
  headers: { host: HOST },
  baseline: "script route (sync, outbox)",
});
hogging = false;
await Promise.all(hogs);
bench.note(`hog requests answered during the isolation runs: ${hogRuns}`);
bench.note(
  `isolation target p99 < 50 ms: /healthz ${hz.p99Ms} ms, hello ${hh.p99Ms} ms → ${Math.max(hz.p99Ms, hh.p99Ms) < 50 ? "met" : "NOT met"}`,
);

// First call of a newly saved script (import-list parse, module cache miss) vs its next call,
// one request at a time from this (otherwise idle) orchestrator process.
const firsts: number[] = [];
const warm: number[] = [];
for (let i = 0; i < 15; i++) {
  await platform.call("save", { name: `fresh${i}`, path: `/fresh${i}` });
  firsts.push((await get(`/fresh${i}`)).ms);
  warm.push((await get(`/fresh${i}`)).ms);
}
const second = median(warm);
bench.figure({
  label: "first call of a newly saved script (median of 15)",
  value: median(firsts),
  unit: "ms",
  baseline: { label: "second call", value: second },
});

await bench.finish([platform, bare]);
