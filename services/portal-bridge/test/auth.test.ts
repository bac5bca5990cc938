import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH, CONNECTOR, type Harness, mcpClient, PATH_SECRET, startHarness } from "./helpers.js";

const INIT = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } },
};
const MCP_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

describe("auth of the bridge's own endpoints", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      env: {
        MCP_CONNECTOR_TOKEN: CONNECTOR,
        MCP_PATH_SECRET: PATH_SECRET,
        MCP_ALLOWED_ORIGINS: "https://claude.example",
      },
    });
  });
  afterAll(async () => h.close());

  const mcp = (headers: Record<string, string>, url = "/mcp") =>
    h.built.app.inject({
      method: "POST",
      url,
      headers: { ...MCP_HEADERS, ...headers },
      payload: JSON.stringify(INIT),
    });

  it("accepts both secrets on /mcp in all four header forms", async () => {
    for (const secret of [AUTH, CONNECTOR]) {
      const forms: Record<string, string>[] = [
        { authorization: `Bearer ${secret}` },
        { authorization: secret },
        { "x-api-key": secret },
        { "x-auth-token": secret },
      ];
      for (const headers of forms) {
        const res = await mcp(headers);
        expect(res.statusCode, JSON.stringify(Object.keys(headers))).toBe(200);
        expect(res.headers["mcp-session-id"]).toBeTruthy();
      }
    }
  });

  it("answers missing or wrong secrets with the same 401 body and WWW-Authenticate, whichever form", async () => {
    const bodies = new Set<string>();
    const forms: Record<string, string>[] = [
      {},
      { authorization: "Bearer wrong" },
      { authorization: "wrong" },
      { "x-api-key": "wrong" },
      { "x-auth-token": `${AUTH}x` },
      { authorization: "Basic Zm9vOmJhcg==" },
    ];
    for (const headers of forms) {
      const res = await mcp(headers);
      expect(res.statusCode).toBe(401);
      expect(res.headers["www-authenticate"]).toMatch(/^Bearer/);
      expect(res.json().error.code).toBe("unauthorized");
      bodies.add(res.body);
    }
    expect(bodies.size).toBe(1);
    const api = await h.built.app.inject({
      method: "GET",
      url: "/api/token",
      headers: { "x-api-key": "wrong" },
    });
    expect(api.statusCode).toBe(401);
    expect(bodies.has(api.body)).toBe(true);
  });

  it("refuses the connector token on /api with 403 forbidden", async () => {
    for (const headers of [{ authorization: `Bearer ${CONNECTOR}` }, { "x-auth-token": CONNECTOR }]) {
      const res = await h.built.app.inject({ method: "GET", url: "/api/token", headers });
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe("forbidden");
    }
  });

  it("serves /<path secret>/mcp without headers; a wrong segment gets the byte-identical 404 of an unknown path", async () => {
    const ok = await mcp({}, `/${PATH_SECRET}/mcp`);
    expect(ok.statusCode).toBe(200);
    const wrong = await mcp({}, `/${PATH_SECRET.slice(0, -1)}y/mcp`);
    const unknown = await mcp({}, "/no-such-path");
    const unknownMcpLike = await mcp({}, "/api/mcp");
    for (const r of [wrong, unknownMcpLike]) {
      expect(r.statusCode).toBe(404);
      expect(r.body).toBe(unknown.body);
      expect(r.headers["content-type"]).toBe(unknown.headers["content-type"]);
      expect(r.headers["content-length"]).toBe(unknown.headers["content-length"]);
      expect(r.headers["www-authenticate"]).toBeUndefined();
    }
    expect(unknown.statusCode).toBe(404);
    expect(wrong.body).not.toContain(PATH_SECRET.slice(0, 8));
  });

  it("checks Host and Origin (DNS-rebinding protection) with 403", async () => {
    const auth = { authorization: `Bearer ${AUTH}` };
    expect((await mcp({ ...auth, host: "localhost:3003" })).statusCode).toBe(200);
    expect((await mcp({ ...auth, host: "127.0.0.1:3003" })).statusCode).toBe(200);
    const evilHost = await mcp({ ...auth, host: "evil.example" });
    expect(evilHost.statusCode).toBe(403);
    const evilOrigin = await mcp({ ...auth, host: "localhost:3003", origin: "https://evil.example" });
    expect(evilOrigin.statusCode).toBe(403);
    expect(
      (await mcp({ ...auth, host: "localhost:3003", origin: "https://claude.example" })).statusCode,
    ).toBe(200);
    // The /token page calls /api/token from its own origin.
    const same = await h.built.app.inject({
      method: "GET",
      url: "/api/token",
      headers: { ...auth, host: "localhost:3003", origin: "http://localhost:3003" },
    });
    expect(same.statusCode).toBe(200);
    // Health stays open.
    expect(
      (await h.built.app.inject({ method: "GET", url: "/healthz", headers: { host: "evil.example" } }))
        .statusCode,
    ).toBe(200);
  });

  it("works with the SDK client through a real socket", async () => {
    const url = await h.listen();
    const { client, close } = await mcpClient(`${url}/mcp`, { "x-api-key": CONNECTOR });
    expect((await client.listTools()).tools.length).toBeGreaterThan(5);
    await close();
    const viaPath = await mcpClient(`${url}/${PATH_SECRET}/mcp`, {});
    expect((await viaPath.client.callTool({ name: "get_profile", arguments: {} })).isError).toBeFalsy();
    await viaPath.close();
  });
});

describe("without MCP_AUTH_TOKEN", () => {
  it("logs a loud warning and serves without authentication", async () => {
    const h = await startHarness({ env: { MCP_AUTH_TOKEN: undefined } });
    try {
      expect(h.logs.text()).toMatch(/MCP_AUTH_TOKEN is not set.*WITHOUT authentication/);
      const res = await h.built.app.inject({ method: "GET", url: "/api/token" });
      expect(res.statusCode).toBe(200);
      const page = await h.built.app.inject({ method: "GET", url: "/token" });
      expect(page.statusCode).toBe(200);
    } finally {
      await h.close();
    }
  });

  it("without PORTAL_BASE_URL still starts, warns once, and portal tools say 'not configured'", async () => {
    const h = await startHarness({ portalUrl: false, withToken: false });
    try {
      expect(h.logs.lines.filter((l) => l.includes("PORTAL_BASE_URL is not set"))).toHaveLength(1);
      const url = await h.listen();
      const { client, close } = await mcpClient(`${url}/mcp`);
      const r = await client.callTool({ name: "get_profile", arguments: {} });
      expect(r.isError).toBe(true);
      expect(JSON.stringify(r.content)).toMatch(/not configured/);
      await close();
    } finally {
      await h.close();
    }
  });
});
