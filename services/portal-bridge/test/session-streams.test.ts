import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH, CONNECTOR, type Harness, mcpClient, mcpPost, startHarness, textOf } from "./helpers.js";

const PROTOCOL = "2025-06-18";

/** Sessions whose clients hold GET streams open must not lock the owner out. */
describe("sessions with streams held open", () => {
  let h: Harness;
  let url: string;
  const streams: ReadableStreamDefaultReader<Uint8Array>[] = [];
  beforeAll(async () => {
    h = await startHarness({
      env: {
        MCP_CONNECTOR_TOKEN: CONNECTOR,
        MCP_MAX_SESSIONS: "4",
        // Above the global cap on purpose: it is clamped below it.
        MCP_MAX_SESSIONS_PER_CREDENTIAL: "20",
        MCP_SESSION_IDLE_MS: "600000",
      },
    });
    url = `${await h.listen()}/mcp`;
  });
  afterAll(async () => {
    for (const r of streams) await r.cancel().catch(() => undefined);
    await h.close();
  });

  const post = (secret: string, body: unknown, sid?: string) => mcpPost(url, secret, body, sid);
  const init = (secret: string) =>
    post(secret, {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "streamer", version: "1" } },
    });
  /** Opens a session and its GET stream, and keeps the stream open. */
  const openWithStream = async (secret: string) => {
    const res = await init(secret);
    expect(res.status).toBe(200);
    const sid = res.headers.get("mcp-session-id") as string;
    await post(secret, { jsonrpc: "2.0", method: "notifications/initialized" }, sid);
    const stream = await fetch(url, {
      headers: {
        authorization: `Bearer ${secret}`,
        accept: "text/event-stream",
        "mcp-session-id": sid,
        "mcp-protocol-version": PROTOCOL,
      },
    });
    expect(stream.status).toBe(200);
    const reader = (stream.body as ReadableStream<Uint8Array>).getReader();
    streams.push(reader);
    await h.clock.advance(1000);
    return { sid, reader };
  };
  const ended = async (reader: ReadableStreamDefaultReader<Uint8Array>) => {
    for (;;) {
      const r = await reader.read();
      if (r.done) return true;
    }
  };
  const list = (secret: string, sid: string) =>
    post(secret, { jsonrpc: "2.0", id: 2, method: "tools/list" }, sid);

  it("the owner always has room; streams do not make a session busy; idle ones close with their stream", async () => {
    // The connector fills every slot but the owner's (per-credential cap clamped to 3 of 4).
    const c = [
      await openWithStream(CONNECTOR),
      await openWithStream(CONNECTOR),
      await openWithStream(CONNECTOR),
    ];
    const fourth = await init(CONNECTOR);
    expect(fourth.status).toBe(503);
    expect(h.built.sessions.countFor("connector")).toBe(3);

    // The owner gets the reserved slot, then a second session by closing the connector's least
    // recently used one that only holds a stream (its stream ends, its next request gets 404).
    const owner1 = await init(AUTH);
    expect(owner1.status).toBe(200);
    const owner2 = await init(AUTH);
    expect(owner2.status).toBe(200);
    expect(await ended((c[0] as { reader: ReadableStreamDefaultReader<Uint8Array> }).reader)).toBe(true);
    expect((await list(CONNECTOR, c[0]?.sid as string)).status).toBe(404);
    expect((await list(CONNECTOR, c[2]?.sid as string)).status).toBe(200);
    expect((await list(AUTH, owner1.headers.get("mcp-session-id") as string)).status).toBe(200);

    // No request for the idle time: closed by the sweep even though its stream is open.
    await h.clock.advance(600_000 + 60_000);
    expect(await ended((c[1] as { reader: ReadableStreamDefaultReader<Uint8Array> }).reader)).toBe(true);
    expect(h.built.sessions.countFor("connector")).toBe(0);
    expect(h.built.sessions.size).toBe(0);
  });
});

describe("connection_status after the portal answered 401", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
    await h.listen();
  });
  afterAll(async () => h.close());

  it("says the session is dead and what to do, never the last budget", async () => {
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    const before = textOf(await client.callTool({ name: "connection_status", arguments: {} }));
    expect(before).toContain("Idle budget: 7200 s of 7200 s (as of Mon 2026-11-23 08:00)");
    h.portal.logout(h.token as string);
    const r = await client.callTool({ name: "list_tasks", arguments: {} });
    expect(r.isError).toBe(true);
    const after = await client.callTool({ name: "connection_status", arguments: {} });
    const text = textOf(after);
    expect(text).not.toContain("Idle budget");
    expect(text).not.toContain("7200 s of");
    expect(text).toContain("Portal session: dead (the portal answered 401");
    expect(text).toContain("paste it at /token");
    expect((after.structuredContent as { upstream: { last_budget_s: unknown } }).upstream.last_budget_s).toBe(
      null,
    );
    await close();
  });
});
