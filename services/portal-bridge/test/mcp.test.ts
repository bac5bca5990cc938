import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH, type Harness, mcpClient, startHarness, textOf } from "./helpers.js";

describe("MCP over Streamable HTTP", () => {
  let h: Harness;
  let url: string;
  beforeAll(async () => {
    h = await startHarness({ env: { MCP_MAX_SESSIONS: "3", MCP_SESSION_IDLE_MS: "600000" } });
    url = `${await h.listen()}/mcp`;
  });
  afterAll(async () => h.close());

  it("lists the portal tools, read-only, with output schemas (no timetable tools without TIMETABLE_*)", async () => {
    const { client, close } = await mcpClient(url);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    expect(names).toEqual(
      [
        "api_get",
        "connection_status",
        "get_course",
        "get_news",
        "get_profile",
        "get_room",
        "list_courses",
        "list_news",
        "list_rooms",
        "list_tasks",
        "upcoming_deadlines",
        "whats_new",
      ].sort(),
    );
    for (const t of tools) {
      expect(t.annotations?.readOnlyHint).toBe(true);
      expect(t.outputSchema?.type).toBe("object");
    }
    await close();
  });

  it("pages list_tasks with limit and cursor, and says when output was truncated", async () => {
    const { client, close } = await mcpClient(url);
    const first = await client.callTool({ name: "list_tasks", arguments: {} });
    const s1 = first.structuredContent as {
      items: { id: string }[];
      total: number;
      next_cursor: string;
      truncated: boolean;
    };
    expect(s1.items).toHaveLength(20);
    expect(s1.total).toBe(45);
    expect(s1.truncated).toBe(true);
    expect(textOf(first)).toContain("truncated");
    const second = await client.callTool({
      name: "list_tasks",
      arguments: { limit: 100, cursor: s1.next_cursor },
    });
    const s2 = second.structuredContent as {
      items: { id: string }[];
      next_cursor: string | null;
      truncated: boolean;
    };
    expect(s2.items).toHaveLength(25);
    expect(s2.items[0]?.id).toBe("task020");
    expect(s2.next_cursor).toBeNull();
    expect(s2.truncated).toBe(false);
    const tooMany = await client.callTool({ name: "list_tasks", arguments: { limit: 101 } });
    expect(tooMany.isError).toBe(true);
    const badCursor = await client.callTool({ name: "list_tasks", arguments: { cursor: "nope" } });
    expect(badCursor.isError).toBe(true);
    expect(textOf(badCursor)).toMatch(/cursor is not valid/);
    await close();
  });

  it("serves profile, courses, rooms and news (HTML converted to text)", async () => {
    const { client, close } = await mcpClient(url);
    const profile = await client.callTool({ name: "get_profile", arguments: {} });
    expect(profile.structuredContent).toMatchObject({
      user: { id: "user-1", first_name: "Ada" },
      school: { name: "Fake Comprehensive" },
    });
    const course = await client.callTool({ name: "get_course", arguments: { course_id: "course1" } });
    expect((course.structuredContent as { course: { title: string } }).course.title).toBe("Maths 9b");
    const room = await client.callTool({ name: "get_room", arguments: { room_id: "room1" } });
    expect(room.structuredContent).toMatchObject({
      room: { name: "Project room" },
      boards: [{ id: "board1" }],
    });
    const news = await client.callTool({ name: "get_news", arguments: { news_id: "news1" } });
    // Links stay as URLs; the structured answer keeps the original markup too.
    expect((news.structuredContent as { text: string }).text).toBe(
      "Sports day is on Friday.\n\n- Bring water\n\nPlan: sports page <https://school.example.org/sports>",
    );
    expect((news.structuredContent as { content: string }).content).toContain("<b>Friday</b>");
    const injected = await client.callTool({ name: "get_course", arguments: { course_id: "../me" } });
    expect(injected.isError).toBe(true);
    await close();
  });

  it("api_get reads any /api/ path and rejects unsafe ones before any upstream call", async () => {
    const { client, close } = await mcpClient(url);
    const ok = await client.callTool({
      name: "api_get",
      arguments: { path: "/api/v3/tasks", query: { limit: 2 } },
    });
    expect(ok.isError).toBeFalsy();
    expect((ok.structuredContent as { data: { data: unknown[] } }).data.data).toHaveLength(2);
    const bad = [
      "/v3/me",
      "https://evil.example/api/v3/me",
      "//evil.example/api/",
      "/api/v3/../../admin",
      "/api/v3/%2e%2e/x",
      "/api/v3\\me",
      "/api/v3%2fme",
      "/api/v3/me%5Cx",
      "/api/v3/me?x=1",
      "/api/http://evil/",
    ];
    const before = h.portal.requests.length;
    for (const path of bad) {
      const r = await client.callTool({ name: "api_get", arguments: { path } });
      expect(r.isError, path).toBe(true);
      expect(textOf(r)).toMatch(/not accepted/);
    }
    expect(h.portal.requests.length).toBe(before);
    await close();
  });

  it("reports upstream errors as tool errors naming the cause, without secrets", async () => {
    const { client, close } = await mcpClient(url);
    const missing = await client.callTool({ name: "api_get", arguments: { path: "/api/v3/nothing-here" } });
    expect(missing.isError).toBe(true);
    expect(textOf(missing)).toMatch(/HTTP 404/);
    h.portal.failNext = { count: 1, status: 503 };
    const down = await client.callTool({ name: "list_courses", arguments: {} });
    expect(down.isError).toBe(true);
    expect(textOf(down)).toMatch(/HTTP 503/);
    expect(textOf(down)).not.toContain(h.token as string);
    await close();
  });

  it("connection_status reports token, budget and keep-alive without secrets", async () => {
    const { client, close } = await mcpClient(url);
    const r = await client.callTool({ name: "connection_status", arguments: {} });
    const s = r.structuredContent as Record<string, Record<string, unknown>>;
    expect(s.token).toMatchObject({ present: true, source: "env", user_id: "user-1" });
    expect(s.keepalive).toMatchObject({ state: "running", interval_ms: 1_800_000 });
    expect(s.upstream).toMatchObject({ idle_timeout_s: 7200, last_budget_s: 7200 });
    expect(s.timetable).toEqual({ configured: false, reachable: null, error: null });
    expect(JSON.stringify(r)).not.toContain(h.token as string);
    expect(JSON.stringify(r)).not.toContain(AUTH);
    await close();
  });

  it("answers a stateless tools/call without a session", async () => {
    const res = await fetch(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${AUTH}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 7,
        method: "tools/call",
        params: { name: "get_profile", arguments: {} },
      }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get("mcp-session-id")).toBeNull();
    const body = (await res.json()) as {
      id: number;
      result: { structuredContent: { user: { id: string } } };
    };
    expect(body.id).toBe(7);
    expect(body.result.structuredContent.user.id).toBe("user-1");
  });

  it("answers GET/DELETE without a session id with 400 in the common error shape", async () => {
    for (const method of ["GET", "DELETE"]) {
      const res = await fetch(url, {
        method,
        headers: { authorization: `Bearer ${AUTH}`, accept: "text/event-stream" },
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("session_required");
    }
  });

  const post = (body: unknown, sid?: string) =>
    fetch(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${AUTH}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        ...(sid ? { "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" } : {}),
      },
      body: JSON.stringify(body),
    });
  const init = () =>
    post({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
    });

  it("evicts the least recently used idle session at the cap (its client gets 404), frees on DELETE and idle", async () => {
    expect(h.built.sessions.size).toBe(0);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await init();
      expect(res.status).toBe(200);
      ids.push(res.headers.get("mcp-session-id") as string);
      await h.clock.advance(1000);
    }
    expect(h.built.sessions.size).toBe(3);
    // The owner's first session is used again, so the second one is now the least recently used.
    expect((await post({ jsonrpc: "2.0", id: 2, method: "tools/list" }, ids[0])).status).toBe(200);
    const fourth = await init();
    expect(fourth.status).toBe(200);
    ids.push(fourth.headers.get("mcp-session-id") as string);
    expect(h.built.sessions.size).toBe(3);
    const evicted = await post({ jsonrpc: "2.0", id: 3, method: "tools/list" }, ids[1]);
    expect(evicted.status).toBe(404);
    expect(((await evicted.json()) as { error: { code: string } }).error.code).toBe("session_not_found");
    expect((await post({ jsonrpc: "2.0", id: 4, method: "tools/list" }, ids[0])).status).toBe(200);
    expect(h.logs.text()).toContain("MCP session closed to make room");

    const del = await fetch(url, {
      method: "DELETE",
      headers: {
        authorization: `Bearer ${AUTH}`,
        "mcp-session-id": ids[0] as string,
        "mcp-protocol-version": "2025-06-18",
      },
    });
    expect(del.status).toBe(200);
    expect(h.built.sessions.size).toBe(2);

    const list = await post({ jsonrpc: "2.0", id: 5, method: "tools/list" }, ids[2]);
    expect(list.status).toBe(200);
    await h.clock.advance(600_000 + 60_000);
    expect(h.built.sessions.size).toBe(0);
    // An expired session id gets 404 so the client knows to initialize again.
    const gone = await post({ jsonrpc: "2.0", id: 6, method: "tools/list" }, ids[2]);
    expect(gone.status).toBe(404);
  });

  it("logs a completion line with status and latency for MCP requests, without the path", async () => {
    const before = h.logs.lines.length;
    expect((await post({ jsonrpc: "2.0", id: 8, method: "tools/list" })).status).toBe(200);
    await new Promise((r) => setImmediate(r)); // the line is written on the response's close event
    const line = h.logs.lines
      .slice(before)
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .find((l) => l.msg === "request completed");
    expect(line).toMatchObject({ res: { statusCode: 200 }, method: "POST" });
    const completions = h.logs.lines.slice(before).filter((l) => l.includes('"request completed"'));
    expect(completions).toHaveLength(1);
    // Non-MCP requests log one completion line too.
    const n = h.logs.lines.length;
    expect((await fetch(`${url.replace(/\/mcp$/, "")}/healthz`)).status).toBe(200);
    const health = h.logs.lines.slice(n).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(health.filter((l) => l.msg === "request completed")).toMatchObject([
      { res: { statusCode: 200 }, method: "GET" },
    ]);
    expect(typeof line?.responseTime).toBe("number");
    expect(JSON.stringify(line)).not.toContain("/mcp");
  });
});
