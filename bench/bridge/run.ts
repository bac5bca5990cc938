/**
 * portal-bridge: what the bridge adds to a tool call.
 * Compares `GET /api/v3/me` sent straight to the fake portal with the same read made as an MCP
 * `tools/call` (api_get) through the bridge (Streamable HTTP, JSON responses, real sockets), at
 * 1 and 50 concurrent sessions. Prints p50/p99 and the added latency. Target: < 1 ms at p50.
 */

import { once } from "node:events";
import { availableParallelism, loadavg } from "node:os";
import { performance } from "node:perf_hooks";
import { Worker } from "node:worker_threads";

const AUTH = "b".repeat(64);
const WARMUP = 300;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function timeLoop(calls: number, fn: () => Promise<void>, out: number[]): Promise<void> {
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
}

/** Start a worker (own event loop) and wait for its first message. */
async function startWorker<T>(file: string, workerData: unknown = {}): Promise<{ worker: Worker; info: T }> {
  // Workers need the TypeScript loader registered again (module hooks are per thread).
  const worker = new Worker(new URL("./worker-entry.mjs", import.meta.url), {
    workerData: { ...(workerData as object), entry: new URL(file, import.meta.url).href },
    execArgv: ["--conditions=source"],
  });
  const [info] = (await once(worker, "message")) as [T];
  return { worker, info };
}

async function main(): Promise<void> {
  // Client (this thread), bridge and fake portal each get their own event loop, as they would
  // as separate processes; otherwise the client's own work would be counted as bridge latency.
  const portalW = await startWorker<{ url: string; token: string }>("./portal-worker.ts");
  const portal = portalW.info;
  const token = portal.token;
  const bridgeW = await startWorker<{ url: string }>("./bridge-worker.ts", {
    portalUrl: portal.url,
    token,
    auth: AUTH,
  });
  const bridge = bridgeW.info.url;

  const direct = async () => {
    const res = await fetch(`${portal.url}/api/v3/me`, { headers: { authorization: `Bearer ${token}` } });
    await res.json();
  };

  const headers = {
    authorization: `Bearer ${AUTH}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  };
  const openSession = async (): Promise<string> => {
    const res = await fetch(bridge, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "bench", version: "1" },
        },
      }),
    });
    await res.json();
    const sid = res.headers.get("mcp-session-id") as string;
    await fetch(bridge, {
      method: "POST",
      headers: { ...headers, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    });
    return sid;
  };
  let id = 1;
  const viaBridge = (sid: string) => async () => {
    const res = await fetch(bridge, {
      method: "POST",
      headers: { ...headers, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: id++,
        method: "tools/call",
        params: { name: "api_get", arguments: { path: "/api/v3/me" } },
      }),
    });
    const body = (await res.json()) as { result?: { isError?: boolean } };
    if (!body.result || body.result.isError) throw new Error("tool call failed");
  };

  const rows: string[] = [];
  const started = performance.now();
  for (const sessions of [1, 50]) {
    const perSession =
      sessions === 1 ? Number(process.env.BENCH_CALLS ?? 1000) : Number(process.env.BENCH_CALLS_50 ?? 24);
    const sids = await Promise.all(Array.from({ length: sessions }, openSession));
    await timeLoop(WARMUP, direct, []);
    await timeLoop(WARMUP, viaBridge(sids[0] as string), []);
    const d: number[] = [];
    const b: number[] = [];
    await Promise.all(Array.from({ length: sessions }, () => timeLoop(perSession, direct, d)));
    await Promise.all(sids.map((sid) => timeLoop(perSession, viaBridge(sid), b)));
    d.sort((x, y) => x - y);
    b.sort((x, y) => x - y);
    const [d50, d99, b50, b99] = [pct(d, 50), pct(d, 99), pct(b, 50), pct(b, 99)];
    rows.push(
      `${String(sessions).padStart(8)}  ${String(d.length).padStart(6)}  ${d50.toFixed(3).padStart(8)}  ${d99.toFixed(3).padStart(8)}  ${b50.toFixed(3).padStart(8)}  ${b99.toFixed(3).padStart(8)}  ${(b50 - d50).toFixed(3).padStart(8)}  ${(b50 / d50).toFixed(2).padStart(6)}`,
    );
  }
  console.log(
    "portal-bridge: tool call (api_get /api/v3/me) through the bridge vs GET straight to the fake portal",
  );
  console.log("latencies in ms, per call, measured by the client; concurrency = concurrent sessions/clients");
  console.log("sessions   calls  dir p50   dir p99  brg p50   brg p99  added p50  ratio");
  for (const r of rows) console.log(r);
  console.log(
    `machine: ${availableParallelism()} cores, load average ${loadavg()[0]?.toFixed(1)} (latency under load is scheduler-bound)`,
  );
  console.log(
    `target: bridge adds < 1 ms at p50   (total ${((performance.now() - started) / 1000).toFixed(1)} s)`,
  );

  for (const w of [bridgeW.worker, portalW.worker]) {
    w.postMessage("stop");
    await once(w, "exit");
  }
}

await main();
