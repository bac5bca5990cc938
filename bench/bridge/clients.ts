// The MCP client of bench/bridge, run by the harness in its own process: `sessions` concurrent
// clients each make `perSession` calls one after the other, either straight to the fake portal
// (GET /api/v3/me) or as an MCP tools/call (api_get /api/v3/me) to an MCP server (the bridge or
// the minimal SDK server), in a session or statelessly (no session id, no initialize).
import type { TaskIo } from "../harness/index.js";

export interface CallArgs {
  mode: "direct" | "mcp";
  /** mcp: without a session (each call stands alone). */
  stateless?: boolean;
  portalUrl: string;
  portalToken: string;
  /** The MCP server under test (the bridge or the minimal server). */
  bridgeUrl: string;
  auth: string;
  sessions: number;
  perSession: number;
  warmup: number;
}

async function timeLoop(calls: number, fn: () => Promise<void>, out: number[]): Promise<void> {
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await fn();
    out.push(performance.now() - t0);
  }
}

/** Sends "warm" after the warm-up, waits for any message, then measures; returns sorted latencies (ms). */
export async function calls(args: CallArgs, io: TaskIo): Promise<number[]> {
  const mcp = `${args.bridgeUrl}/mcp`;
  const headers = {
    authorization: `Bearer ${args.auth}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
  };
  const direct = async () => {
    const res = await fetch(`${args.portalUrl}/api/v3/me`, {
      headers: { authorization: `Bearer ${args.portalToken}` },
    });
    await res.json();
  };
  const openSession = async (): Promise<string> => {
    const res = await fetch(mcp, {
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
    await fetch(mcp, {
      method: "POST",
      headers: { ...headers, "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" },
      body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
    });
    return sid;
  };
  let id = 1;
  const viaBridge = (sid: string | null) => async () => {
    const res = await fetch(mcp, {
      method: "POST",
      headers: {
        ...headers,
        ...(sid ? { "mcp-session-id": sid } : {}),
        "mcp-protocol-version": "2025-06-18",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: id++,
        method: "tools/call",
        params: { name: "api_get", arguments: { path: "/api/v3/me" } },
      }),
    });
    const body = (await res.json()) as { result?: { isError?: boolean } };
    if (res.status !== 200 || !body.result || body.result.isError)
      throw new Error(`tool call failed: ${JSON.stringify(body).slice(0, 300)}`);
  };
  const fns =
    args.mode === "direct"
      ? Array.from({ length: args.sessions }, () => direct)
      : args.stateless
        ? Array.from({ length: args.sessions }, () => viaBridge(null))
        : (await Promise.all(Array.from({ length: args.sessions }, openSession))).map(viaBridge);
  // Warm up at the measured concurrency, so pools and caches reach their steady size.
  await Promise.all(fns.map((fn) => timeLoop(Math.ceil(args.warmup / fns.length), fn, [])));
  await io.send("warm");
  await io.next();
  const out: number[] = [];
  await Promise.all(fns.map((fn) => timeLoop(args.perSession, fn, out)));
  return out.sort((a, b) => a - b);
}
