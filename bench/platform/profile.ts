// CPU profile of the platform server's main thread while the hello route is under load (the
// load generator in its own process, as in run.ts), or with `triggers` as argument while a burst
// of triggered runs goes through (bench/platform-async's target; DATABASE_URL + TEST_BACKEND=postgres
// for PostgreSQL). Writes .bench-results/platform-<mode>.cpuprofile (open it in Chrome DevTools)
// and prints the functions with the most self and inclusive time.
// Run: npm run build && node --import tsx bench/platform/profile.ts [triggers]
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startBench } from "../harness/index.js";
import { withDatabase } from "../platform-async/measure.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const mode = process.argv[2] === "triggers" ? "triggers" : "hello";
const file = join(resolve(here, "../.."), ".bench-results", `platform-${mode}.cpuprofile`);
const HOST = "bench.test";
const bench = startBench("platform-profile", `CPU profile of the ${mode} path under load`);
if (mode === "triggers") {
  const pgUrl = process.env.TEST_BACKEND === "postgres" ? process.env.DATABASE_URL : undefined;
  const profileRun = async (databaseUrl?: string) => {
    const t = await bench.server(
      "triggers",
      new URL("../platform-async/targets.ts", import.meta.url),
      "startPlatformAsync",
      databaseUrl ? { databaseUrl } : {},
    );
    await t.call("burst", 100);
    await t.call("profileStart");
    const cpu0 = await t.cpuSeconds();
    const t0 = performance.now();
    const n = Number(process.env.BENCH_N ?? 600);
    await t.call("burst", n);
    bench.note(
      `${n} triggered runs: ${((n * 1000) / (performance.now() - t0)).toFixed(1)} runs/s, ${((((await t.cpuSeconds()) - cpu0) * 1000) / n).toFixed(3)} ms CPU/run`,
    );
    await t.call("profileStop", file);
    await t.stop();
  };
  if (pgUrl) await withDatabase(pgUrl, profileRun);
  else await profileRun();
  await bench.finish([]);
  summarize();
  process.exit(0);
}
const platform = await bench.server("platform", new URL("./target.ts", import.meta.url), "startPlatform");
await platform.call("save", { name: "hello", path: "/hello" });
const load = {
  path: "/hello",
  connections: 32,
  duration: Number(process.env.BENCH_SECONDS ?? 10),
  headers: { host: HOST },
};
await bench.load("warm-up", platform, { ...load, duration: 3 });
type Stats = {
  transactions: number;
  items: number;
  failed: number;
  commitMs: number;
  commitStatementMs: number;
  windows: number;
};
const before = await platform.call<Stats>("commitStats");
await platform.call("profileStart");
const r = await bench.load("script route (profiled)", platform, load);
await platform.call("profileStop", file);
const after = await platform.call<Stats>("commitStats");
// The counters cover the load's unmeasured warm-up requests too.
const requests = r.requests + 500;
const tx = after.transactions - before.transactions;
bench.note(
  `group commit: ${(tx / requests).toFixed(3)} transactions per request, ${((after.items - before.items) / Math.max(1, tx)).toFixed(1)} writes per transaction, ${((after.commitMs - before.commitMs) / requests).toFixed(3)} ms in commits per request, ${((after.commitStatementMs - before.commitStatementMs) / Math.max(1, tx)).toFixed(3)} ms per COMMIT statement, ${after.windows - before.windows} timed windows`,
);
await bench.finish([platform]);
summarize();

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
function summarize(): void {
  const profile = JSON.parse(readFileSync(file, "utf8")) as { nodes: Node[]; samples: number[] };
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const counts = new Map<number, number>();
  for (const s of profile.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
  const total = profile.samples.length;
  const name = (n: Node) =>
    `${n.callFrame.functionName || "(anon)"} ${n.callFrame.url.replace(/^.*node_modules\//, "nm:").replace(/^.*\/work\/main\//, "")}:${n.callFrame.lineNumber + 1}`;
  const self = new Map<string, number>();
  const incl = new Map<string, number>();
  for (const [id, c] of counts) {
    const n = byId.get(id) as Node;
    self.set(name(n), (self.get(name(n)) ?? 0) + c);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const k = name(byId.get(cur) as Node);
      if (seen.has(k)) continue;
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + c);
    }
  }
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)}%  ${k}`)
      .join("\n");
  process.stdout.write(`\nself time (${total} samples)\n${top(self, 45)}\n\ninclusive\n${top(incl, 70)}\n`);
}
