/**
 * portal-bridge: what the bridge adds to a tool call.
 * Compares `GET /api/v3/me` sent straight to the fake portal (the baseline) with the same read made
 * as an MCP `tools/call` (api_get) through the bridge (Streamable HTTP, JSON responses, real
 * sockets), at 1 and 50 concurrent sessions. The fake portal, the bridge and the client each run in
 * their own process (bench/harness); CPU per call is read from the OS. Target: < 1 ms at p50.
 */
import { percentile, type ServerProc, startBench } from "../harness/index.js";
import type { CallArgs } from "./clients.js";

const AUTH = "b".repeat(64);
const WARMUP = 300;

const bench = startBench("bridge", "MCP tools/call through the bridge vs GET straight to the fake portal");
const portal = await bench.server("fake portal", new URL("./targets.ts", import.meta.url), "startPortal");
const portalToken = portal.info.token as string;
const bridge = await bench.server("portal-bridge", new URL("./targets.ts", import.meta.url), "startBridge", {
  portalUrl: portal.url,
  token: portalToken,
  auth: AUTH,
});

async function measure(mode: CallArgs["mode"], sessions: number, perSession: number) {
  const t = bench.task<number[]>(new URL("./clients.ts", import.meta.url), "calls", {
    mode,
    portalUrl: portal.url,
    portalToken,
    bridgeUrl: bridge.url,
    auth: AUTH,
    sessions,
    perSession,
    warmup: WARMUP,
  } satisfies CallArgs);
  await t.next();
  const cpu0 = await Promise.all([portal, bridge].map((s: ServerProc) => s.cpuSeconds()));
  t.send("go");
  const lat = (await t.result).value;
  const cpu1 = await Promise.all([portal, bridge].map((s: ServerProc) => s.cpuSeconds()));
  const perCall = (i: number) => (((cpu1[i] ?? 0) - (cpu0[i] ?? 0)) * 1000) / lat.length;
  return { lat, portalCpu: perCall(0), bridgeCpu: perCall(1) };
}

for (const sessions of [1, 50]) {
  const perSession =
    sessions === 1 ? Number(process.env.BENCH_CALLS ?? 1000) : Number(process.env.BENCH_CALLS_50 ?? 24);
  const d = await measure("direct", sessions, perSession);
  const b = await measure("bridge", sessions, perSession);
  const tag = `${sessions} session${sessions > 1 ? "s" : ""}, ${b.lat.length} calls`;
  const d50 = percentile(d.lat, 50);
  const b50 = percentile(b.lat, 50);
  bench.figure({
    label: `${tag}: p50 through the bridge`,
    value: b50,
    unit: "ms",
    baseline: { label: "direct", value: d50 },
  });
  bench.figure({
    label: `${tag}: p99 through the bridge`,
    value: percentile(b.lat, 99),
    unit: "ms",
    baseline: { label: "direct", value: percentile(d.lat, 99) },
  });
  bench.figure({ label: `${tag}: added p50 (target < 1 ms)`, value: b50 - d50, unit: "ms" });
  bench.figure({
    label: `${tag}: bridge CPU per call (+ portal CPU ${b.portalCpu.toFixed(3)} ms)`,
    value: b.bridgeCpu,
    unit: "ms",
    baseline: { label: "portal CPU per direct call", value: d.portalCpu },
  });
}

await bench.finish([bridge, portal]);
