// CPU samples (not wall time) of the platform server under the hello load, by thread, with Linux
// `perf` (V8's own profiler counts wall time: a preempted syscall looks expensive). The server
// runs with --perf-basic-prof so JIT frames have names. Needs `perf` and perf_event_paranoid <= 2.
// Run: npm run build && node --import tsx bench/platform/perf-profile.ts
// Prints the top symbols (self samples, share of that thread group) of the main thread, of the
// sandbox workers and of the other threads, and keeps the perf data (its path is printed) for
// `perf report -i <file> --tid <tid>` / `perf script` (inclusive costs by call chain).
import { execFileSync, spawn } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { startBench } from "../harness/index.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const out = `/tmp/platform-perf-${process.pid}.data`;
// Inherited by the forked target (the harness passes the environment on).
process.env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ""} --perf-basic-prof-only-functions`.trim();
const bench = startBench("platform-perf", "perf samples of the hello path by thread");
const platform = await bench.server("platform", new URL("./target.ts", import.meta.url), "startPlatform");
process.env.NODE_OPTIONS = "";
await platform.call("save", { name: "hello", path: "/hello" });
const load = { path: "/hello", connections: 32, headers: { host: "bench.test" } };
await bench.load("warm-up", platform, { ...load, duration: 3 });
const pid = platform.pid;
const measured = bench.load("script route (perf)", platform, { ...load, duration: SECONDS + 2 });
await new Promise((r) => setTimeout(r, 1000));
const perf = spawn(
  "perf",
  ["record", "-F", "999", "-g", "-p", String(pid), "-o", out, "--", "sleep", String(SECONDS)],
  {
    stdio: "ignore",
  },
);
await new Promise((r) => perf.on("exit", r));
await measured;
const tids = readdirSync(`/proc/${pid}/task`).map(Number);
const cpu = (tid: number) => {
  const f = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
  return Number(f[11]) + Number(f[12]);
};
const busiest = tids
  .filter((t) => t !== pid)
  .map((t) => ({ t, c: cpu(t) }))
  .sort((a, b) => b.c - a.c);
const workers = new Set(busiest.slice(0, 2).map((x) => x.t));
await bench.finish([platform]);

const report = (label: string, tidList: number[]) => {
  if (tidList.length === 0) return;
  const text = execFileSync(
    "perf",
    [
      "report",
      "-i",
      out,
      "--no-children",
      "--sort",
      "sym",
      "--tid",
      tidList.join(","),
      "--stdio",
      "-g",
      "none",
      "--percentage",
      "relative",
      "--percent-limit",
      "0.5",
    ],
    { encoding: "utf8", maxBuffer: 64 * 1024 * 1024, stdio: ["ignore", "pipe", "ignore"] },
  );
  process.stdout.write(
    `\n=== ${label} ===\n${text
      .split("\n")
      .filter((l) => l.trim() && !l.startsWith("#"))
      .slice(0, 60)
      .join("\n")}\n`,
  );
};
process.stdout.write(`perf data: ${out} (main thread ${pid}, workers ${[...workers].join(", ")})\n`);
report("main thread", [pid]);
report("sandbox workers", [...workers]);
report(
  "other threads",
  tids.filter((t) => t !== pid && !workers.has(t)),
);
