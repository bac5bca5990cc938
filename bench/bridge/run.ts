/**
 * portal-bridge: the cost of a tool call against the SDK's floor.
 * The same tool (`api_get /api/v3/me`, reading the fake portal) is called through the bridge and
 * through a minimal server built on the same SDK version (bench/bridge/minimal.ts), in a session
 * and statelessly. The fake portal, the bridge, the minimal server and the MCP client each run in
 * their own process (bench/harness); server CPU per call is read from the OS. Rounds alternate
 * the two servers so drift in machine load hits both; the figures are the median of the rounds.
 * Each is measured with 1 client and with 50 concurrent clients (BENCH_CLIENTS), the same total
 * number of calls. Targets: bridge CPU per call at most 1.1x the floor; a stateless call at most
 * 1.2x a stateful one at every concurrency. Also shown: the latency a call adds over a GET
 * straight to the portal.
 */
import { median, percentile, type ServerProc, startBench } from "../harness/index.js";
import type { CallArgs } from "./clients.js";

const AUTH = "b".repeat(64);
const WARMUP = Number(process.env.BENCH_WARMUP ?? 400);
const CALLS = Number(process.env.BENCH_CALLS ?? 1500);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const CLIENTS = (process.env.BENCH_CLIENTS ?? "1,50").split(",").map(Number);

const bench = startBench(
  "bridge",
  "MCP tools/call: the bridge vs a minimal server on the same SDK (the floor)",
);
const portal = await bench.server("fake portal", new URL("./targets.ts", import.meta.url), "startPortal");
const portalToken = portal.info.token as string;
const bridge = await bench.server("portal-bridge", new URL("./targets.ts", import.meta.url), "startBridge", {
  portalUrl: portal.url,
  token: portalToken,
  auth: AUTH,
});
const minimal = await bench.server(
  "minimal SDK server",
  new URL("./minimal.ts", import.meta.url),
  "startMinimal",
  {
    portalUrl: portal.url,
    token: portalToken,
  },
);

async function measure(mode: CallArgs["mode"], server: ServerProc, stateless: boolean, clients = 1) {
  const t = bench.task<number[]>(new URL("./clients.ts", import.meta.url), "calls", {
    mode,
    stateless,
    portalUrl: portal.url,
    portalToken,
    bridgeUrl: server.url,
    auth: AUTH,
    sessions: clients,
    perSession: Math.ceil(CALLS / clients),
    warmup: WARMUP,
  } satisfies CallArgs);
  await t.next();
  const watched = [portal, server];
  const cpu0 = await Promise.all(watched.map((s) => s.cpuSeconds()));
  t.send("go");
  const lat = (await t.result).value;
  const cpu1 = await Promise.all(watched.map((s) => s.cpuSeconds()));
  const perCall = (i: number) => (((cpu1[i] ?? 0) - (cpu0[i] ?? 0)) * 1000) / lat.length;
  return { lat, portalCpu: perCall(0), serverCpu: perCall(1) };
}

type Row = { cpu: number[]; p50: number[] };
const rows: Record<string, Row> = {};
const add = (key: string, r: { lat: number[]; serverCpu: number }) => {
  rows[key] ??= { cpu: [], p50: [] };
  rows[key].cpu.push(r.serverCpu);
  rows[key].p50.push(percentile(r.lat, 50));
};
const direct: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  direct.push(percentile((await measure("direct", portal, false)).lat, 50));
  for (const clients of CLIENTS)
    for (const stateless of [false, true]) {
      const kind = `${stateless ? "stateless" : "stateful"} x${clients}`;
      // Alternate which server goes first, so neither always meets the same load.
      const order = round % 2 === 0 ? ([minimal, bridge] as const) : ([bridge, minimal] as const);
      for (const s of order)
        add(`${s === bridge ? "bridge" : "floor"} ${kind}`, await measure("mcp", s, stateless, clients));
    }
}

const med = (key: string, f: keyof Row) => median(rows[key]?.[f] ?? []);
const rounds = (key: string) => rows[key]?.cpu.map((x) => x.toFixed(3)).join("/");
for (const clients of CLIENTS) {
  for (const mode of ["stateful", "stateless"]) {
    const kind = `${mode} x${clients}`;
    const b = med(`bridge ${kind}`, "cpu");
    const f = med(`floor ${kind}`, "cpu");
    bench.figure({
      label: `${mode} tools/call, ${clients} client${clients === 1 ? "" : "s"}: bridge CPU per call (target <= 1.1x floor)`,
      value: b,
      unit: "ms",
      baseline: { label: "minimal SDK server", value: f },
      note: `ratio ${(b / f).toFixed(2)}; rounds ${rounds(`bridge ${kind}`)} vs ${rounds(`floor ${kind}`)}`,
    });
    bench.figure({
      label: `${mode} tools/call, ${clients} client${clients === 1 ? "" : "s"}: p50 latency through the bridge`,
      value: med(`bridge ${kind}`, "p50"),
      unit: "ms",
      baseline: { label: "minimal SDK server", value: med(`floor ${kind}`, "p50") },
    });
  }
  const sl = med(`bridge stateless x${clients}`, "cpu");
  const sf = med(`bridge stateful x${clients}`, "cpu");
  const fl = med(`floor stateless x${clients}`, "cpu") / med(`floor stateful x${clients}`, "cpu");
  bench.figure({
    label: `bridge, ${clients} client${clients === 1 ? "" : "s"}: stateless CPU per call (target <= 1.2x stateful)`,
    value: sl,
    unit: "ms",
    baseline: { label: "bridge stateful", value: sf },
    note: `ratio ${(sl / sf).toFixed(2)} (the floor's own stateless/stateful: ${fl.toFixed(2)})`,
  });
}
bench.figure({
  label: `p50 added by the bridge over a GET straight to the portal (${CALLS} calls/round, 1 client)`,
  value: med("bridge stateful x1", "p50") - median(direct),
  unit: "ms",
});

await bench.finish([bridge, minimal, portal]);
