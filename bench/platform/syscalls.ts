// System calls per hello request on the server's main thread, bare Fastify against the platform
// (Linux, needs `strace`). On this VM a system call costs the main thread several µs (perf shows
// kernel entry as the largest single item), so the count per request is a cost figure of its
// own. strace slows the traced thread, so req/s under it mean nothing; the counts per request do
// not depend on speed. Only the main thread is traced (no -f): workers, the threadpool's
// fdatasync and the checkpoint worker are not counted.
// Run: npm run build && node --import tsx bench/platform/syscalls.ts
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { type ServerProc, startBench } from "../harness/index.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const bench = startBench(
  "platform-syscalls",
  "system calls per hello request on the main thread (strace -c)",
);
const platform = await bench.server("platform", new URL("./target.ts", import.meta.url), "startPlatform");
await platform.call("save", { name: "hello", path: "/hello" });
const bare = await bench.server("bare Fastify", new URL("../harness/bare.ts", import.meta.url), "startBare", {
  routes: [{ path: "/hello", body: JSON.stringify({ hello: "world" }) }],
});
const load = { path: "/hello", connections: 32, headers: { host: "bench.test" } };

/** strace -c summary lines → calls by syscall name. */
function parseSummary(text: string): Map<string, number> {
  const calls = new Map<string, number>();
  for (const line of text.split("\n")) {
    // % time  seconds  usecs/call  calls  [errors]  syscall
    const m = /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?([a-z_0-9]+)\s*$/.exec(line);
    if (m?.[2] && m[2] !== "total") calls.set(m[2], Number(m[1]));
  }
  return calls;
}

async function traced(label: string, target: ServerProc): Promise<Map<string, number>> {
  await bench.load(`${label} warm-up`, target, { ...load, duration: 3 });
  const out = `/tmp/platform-syscalls-${process.pid}-${target.pid}.txt`;
  const strace = spawn("strace", ["-c", "-p", String(target.pid), "-o", out], { stdio: "ignore" });
  const exited = new Promise((r) => strace.on("exit", r));
  await new Promise((r) => setTimeout(r, 500)); // attached
  // No warm-up inside the traced window: every request strace sees is counted by the load.
  const res = await bench.load(`${label} (traced, speed not meaningful)`, target, {
    ...load,
    duration: SECONDS,
    warmup: 0,
  });
  strace.kill("SIGINT");
  await exited;
  const perRequest = new Map<string, number>();
  for (const [name, n] of parseSummary(readFileSync(out, "utf8"))) perRequest.set(name, n / res.requests);
  return perRequest;
}

const sides = [
  { label: "bare Fastify", calls: await traced("bare Fastify", bare) },
  { label: "platform", calls: await traced("platform", platform) },
];
for (const s of sides) {
  const total = [...s.calls.values()].reduce((a, b) => a + b, 0);
  const top = [...s.calls.entries()]
    .sort((a, b) => b[1] - a[1])
    .filter(([, n]) => n >= 0.01)
    .map(([name, n]) => `${name} ${n.toFixed(2)}`)
    .join(", ");
  bench.note(`${s.label}: ${total.toFixed(2)} system calls per request on the main thread (${top})`);
}
await bench.finish([platform, bare]);
