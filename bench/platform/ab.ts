// A/B of the hello route: this tree's platform against another checkout's (BASE_DIR, e.g. a
// `git archive <commit>` unpacked with node_modules linked in), each in its own process, in
// interleaved rounds under the same load, so the machine's load hits both alike. Prints req/s and
// CPU ms per request by thread (main, sandbox workers, the rest) per side, medians over rounds.
// Run: npm run build && BASE_DIR=/tmp/base node --import tsx bench/platform/ab.ts (a base from before
// the package entry points runs from source only: add --conditions=source, then both sides do).
import { pathToFileURL } from "node:url";
import { median, startBench } from "../harness/index.js";

const base = process.env.BASE_DIR;
if (!base) throw new Error("BASE_DIR: a checkout of the base commit");
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const bench = startBench("platform-ab", "hello route: this tree against BASE_DIR, interleaved rounds");
const sides = [
  { name: "base", url: pathToFileURL(`${base}/bench/platform/target.ts`) },
  { name: "this tree", url: new URL("./target.ts", import.meta.url) },
];
type ThreadCpu = { tid: number; main: boolean; cpuS: number }[];
const targets = [];
for (const s of sides) {
  const t = await bench.server(s.name, s.url, "startPlatform", { backend: "sqlite" });
  await t.call("save", { name: "hello", path: "/hello" });
  targets.push({
    ...s,
    t,
    rows: [] as { rps: number; main: number; workers: number; rest: number; all: number }[],
  });
}
const load = { path: "/hello", connections: 32, headers: { host: "bench.test" } };
for (const x of targets) await bench.load(`${x.name} warm-up`, x.t, { ...load, duration: 3 });
for (let r = 0; r < ROUNDS; r++)
  for (const x of r % 2 === 0 ? targets : [...targets].reverse()) {
    const t0 = await x.t.call<ThreadCpu>("threads");
    const res = await bench.load(`${x.name} round ${r + 1}`, x.t, { ...load, duration: SECONDS });
    const t1 = await x.t.call<ThreadCpu>("threads");
    const before = new Map(t0.map((t) => [t.tid, t.cpuS]));
    const d = t1.map((t) => ({ ...t, cpuS: t.cpuS - (before.get(t.tid) ?? 0) }));
    const n = res.requests;
    const ms = (s: number) => (s * 1000) / n;
    const others = d.filter((t) => !t.main).sort((a, b) => b.cpuS - a.cpuS);
    const w = others.slice(0, 2).reduce((a, t) => a + t.cpuS, 0);
    const rest = others.slice(2).reduce((a, t) => a + t.cpuS, 0);
    const main = d.find((t) => t.main)?.cpuS ?? 0;
    x.rows.push({
      rps: res.reqPerSec,
      main: ms(main),
      workers: ms(w),
      rest: ms(rest),
      all: ms(main + w + rest),
    });
  }
for (const x of targets) {
  const m = (k: keyof (typeof x.rows)[number]) => median(x.rows.map((row) => row[k]));
  bench.note(
    `${x.name}: ${m("rps").toFixed(0)} req/s (${x.rows.map((row) => row.rps.toFixed(0)).join(", ")}); CPU ms/req main ${m("main").toFixed(3)}, workers ${m("workers").toFixed(3)}, other threads ${m("rest").toFixed(3)}, all ${m("all").toFixed(3)}`,
  );
}
await bench.finish(targets.map((x) => x.t));
