// Floors of the hello route (issue 10 item 8): what a sync script request costs when only the
// parts it cannot do without remain (bench/platform-floors/target.ts: kit's HTTP app, a worker
// round trip, the seed's durable outbox + settle writes), next to bare Fastify and the platform
// itself, on SQLite. Every server in its own process, autocannon in its own, same path, same
// bytes, same connections as `npm run bench -- platform`'s hello step. BENCH_ROUNDS rounds
// (default 3), the order reversed every other round; figures are medians over the rounds.
import { request } from "node:http";
import { loadavg } from "node:os";
import { type LoadFigures, median, startBench } from "../harness/index.js";
import type { Layer } from "./target.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const HOST = "bench.test";
const load = { path: "/hello", connections: 32, duration: 8, warmup: 3000, headers: { host: HOST } };

const bench = startBench(
  "platform-floors",
  "hello route floors: kit HTTP, + worker round trip, + durable outbox/settle writes, against bare Fastify and the platform",
);
const loadAvg = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");

const platform = await bench.server(
  "platform",
  new URL("../platform/target.ts", import.meta.url),
  "startPlatform",
  {
    backend: "sqlite",
  },
);
await platform.call("save", { name: "hello", path: "/hello" });
const sample = await new Promise<{ body: string; type: string }>((resolve, reject) => {
  const req = request(`${platform.url}/hello`, { headers: { host: HOST } }, (res) => {
    let body = "";
    res.setEncoding("utf8");
    res.on("data", (d: string) => {
      body += d;
    });
    res.on("end", () => resolve({ body, type: String(res.headers["content-type"]) }));
  });
  req.on("error", reject);
  req.end();
});
const bare = await bench.server("bare Fastify", new URL("../harness/bare.ts", import.meta.url), "startBare", {
  routes: [{ path: "/hello", body: sample.body, contentType: sample.type }],
});
const layers: { layer: Layer; label: string }[] = [
  { layer: "kit", label: "kit HTTP app + metrics" },
  { layer: "worker", label: "kit + worker round trip" },
  { layer: "writes", label: "kit + durable outbox/settle writes" },
  { layer: "all", label: "kit + worker + writes" },
];
type Side = { label: string; target: typeof bare; threads: boolean; rows: LoadFigures[]; main: number[] };
const sides: Side[] = [{ label: "bare Fastify", target: bare, threads: false, rows: [], main: [] }];
for (const l of layers)
  sides.push({
    label: l.label,
    target: await bench.server(l.label, new URL("./target.ts", import.meta.url), "startFloor", {
      layer: l.layer,
    }),
    threads: true,
    rows: [],
    main: [],
  });
sides.push({ label: "platform hello route", target: platform, threads: true, rows: [], main: [] });

type ThreadCpu = { tid: number; main: boolean; cpuS: number }[];
const mainCpu = (t: ThreadCpu) => t.find((x) => x.main)?.cpuS ?? 0;
const allCpu = (t: ThreadCpu) => t.reduce((n, x) => n + x.cpuS, 0);
for (let r = 0; r < ROUNDS; r++) {
  for (const s of r % 2 === 0 ? sides : [...sides].reverse()) {
    const t0 = s.threads ? await s.target.call<ThreadCpu>("threads") : null;
    const row = await bench.load(`${s.label}, round ${r + 1}`, s.target, {
      ...load,
      ...(s === sides[0] ? {} : { baseline: `bare Fastify, round ${r + 1}` }),
    });
    if (t0) {
      const t1 = await s.target.call<ThreadCpu>("threads");
      // The thread counters cover the warm-up too: the main thread's share of them, applied to
      // the measured CPU per request.
      const share = (mainCpu(t1) - mainCpu(t0)) / Math.max(1e-9, allCpu(t1) - allCpu(t0));
      s.main.push(share * row.cpuMsPerReq);
    }
    s.rows.push(row);
  }
  bench.note(`load average ${loadAvg()} after round ${r + 1}`);
}
const bareRps = median(sides[0]?.rows.map((x) => x.reqPerSec) ?? []);
for (const s of sides) {
  const rps = median(s.rows.map((x) => x.reqPerSec));
  bench.figure({
    label: s.label,
    value: Math.round(rps),
    unit: "req/s",
    ...(s === sides[0] ? {} : { baseline: { label: "bare Fastify", value: bareRps } }),
    note: `CPU ${median(s.rows.map((x) => x.cpuMsPerReq)).toFixed(3)} ms/req${s.main.length ? ` (main thread ${median(s.main).toFixed(3)})` : ""}, p99 ${median(s.rows.map((x) => x.p99Ms))} ms, load generator ${median(s.rows.map((x) => x.loaderCores)).toFixed(2)} cores`,
  });
}
for (const s of sides) await s.target.stop();
await bench.finish();
