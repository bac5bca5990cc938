// CPU profile of the platform server's main thread while the hello route is under load (the
// load generator in its own process, as in run.ts). Writes .bench-results/platform-hello.cpuprofile
// (open it in Chrome DevTools) and prints the functions with the most self time.
// Run: node --conditions=source --import tsx bench/platform/profile.ts
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { startBench } from "../harness/index.js";

const here = fileURLToPath(new URL(".", import.meta.url));
const file = join(resolve(here, "../.."), ".bench-results", "platform-hello.cpuprofile");
const HOST = "bench.test";
const bench = startBench("platform-profile", "CPU profile of the hello route under load");
const platform = await bench.server("platform", new URL("./target.ts", import.meta.url), "startPlatform");
await platform.call("save", { name: "hello", path: "/hello" });
const load = {
  path: "/hello",
  connections: 32,
  duration: Number(process.env.BENCH_SECONDS ?? 10),
  headers: { host: HOST },
};
await bench.load("warm-up", platform, { ...load, duration: 3 });
type Stats = { transactions: number; items: number; failed: number; commitMs: number };
const before = await platform.call<Stats>("commitStats");
await platform.call("profileStart");
const r = await bench.load("script route (profiled)", platform, load);
await platform.call("profileStop", file);
const after = await platform.call<Stats>("commitStats");
// The counters cover the load's unmeasured warm-up requests too.
const requests = r.requests + 500;
const tx = after.transactions - before.transactions;
bench.note(
  `group commit: ${(tx / requests).toFixed(3)} transactions per request, ${((after.items - before.items) / Math.max(1, tx)).toFixed(1)} writes per transaction, ${((after.commitMs - before.commitMs) / requests).toFixed(3)} ms in commits per request`,
);
await bench.finish([platform]);

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}
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
