import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signJwt } from "../src/testing/fake-portal.js";
import { AUTH, CONNECTOR, type Harness, mcpClient, PATH_SECRET, startHarness, USER } from "./helpers.js";

describe("logs never contain request paths, tokens or secrets", () => {
  let h: Harness;
  const seen: string[] = [];
  beforeAll(async () => {
    h = await startHarness({
      env: { MCP_CONNECTOR_TOKEN: CONNECTOR, MCP_PATH_SECRET: PATH_SECRET, LOG_LEVEL: "trace" },
    });
    await h.listen();
  });
  afterAll(async () => h.close());

  it("runs a full scenario and finds none of them in the captured log text", async () => {
    const url = h.url;
    seen.push(h.token as string);
    // Auth failures in every header form, a wrong path secret, the connector on /api.
    const forms: Record<string, string>[] = [
      { authorization: "Bearer nope-guess" },
      { "x-api-key": `${AUTH}0` },
      { "x-auth-token": "x" },
    ];
    for (const headers of forms)
      expect((await fetch(`${url}/mcp`, { method: "POST", headers })).status).toBe(401);
    expect((await fetch(`${url}/${PATH_SECRET}x/mcp`, { method: "POST" })).status).toBe(404);
    expect((await fetch(`${url}/api/token`, { headers: { "x-api-key": CONNECTOR } })).status).toBe(403);

    // MCP tool calls through the header and through the path secret.
    const a = await mcpClient(`${url}/mcp`, { authorization: `Bearer ${AUTH}` });
    await a.client.callTool({ name: "list_tasks", arguments: { limit: 3 } });
    await a.client.callTool({ name: "api_get", arguments: { path: "/api/v3/me" } });
    await a.client.callTool({ name: "api_get", arguments: { path: "https://evil/api/" } });
    await a.close();
    const b = await mcpClient(`${url}/${PATH_SECRET}/mcp`, {});
    await b.client.callTool({ name: "connection_status", arguments: {} });
    await b.close();

    // Token PUTs: malformed (looks secret), another account, accepted.
    const malformed = `jwt=not.a-${"s".repeat(30)}; Path=/`;
    const other = h.portal.login({ userId: "user-2", accountId: "acct-2" });
    const fresh = h.portal.login(USER);
    const expired = signJwt({ userId: "user-1", accountId: "acct-1", jti: "e", exp: 1 });
    seen.push(other, fresh, expired, "s".repeat(30));
    for (const [payload, status] of [
      [malformed, 422],
      [expired, 422],
      [other, 409],
      [fresh, 200],
    ] as const) {
      const res = await fetch(`${url}/api/token`, {
        method: "PUT",
        headers: { authorization: `Bearer ${AUTH}`, "content-type": "text/plain" },
        body: payload,
      });
      expect(res.status).toBe(status);
    }
    await fetch(`${url}/api/files/6543210fedcba98765432100/worksheet.pdf`, {
      headers: { "x-auth-token": AUTH },
    });
    await fetch(`${url}/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: `secret=${AUTH}`,
    });

    // The keep-alive meets a 401 and stops for good.
    h.portal.logout(fresh);
    await h.clock.advance(30 * 60_000);
    await h.built.keepalive.settled();
    expect(h.built.keepalive.status().state).toBe("stopped");

    const text = h.logs.text();
    expect(text).toContain("keep-alive stopped for good");
    // One line per request with the route pattern, never the path.
    expect(text).toContain('"route":"/:pathSecret/mcp","status":200');
    for (const secret of [AUTH, CONNECTOR, PATH_SECRET, ...seen])
      expect(text.includes(secret), secret.slice(0, 12)).toBe(false);
    for (const line of h.logs.lines) {
      const entry = JSON.parse(line) as Record<string, unknown> & { req?: Record<string, unknown> };
      expect(entry.req?.path ?? entry.req?.url).toBeUndefined();
      expect(entry.url === undefined || entry.msg === `listening on ${entry.url}`).toBe(true);
    }
    for (const fragment of ["worksheet.pdf", "6543210fedcba", "/api/v3/me", "evil"])
      expect(text).not.toContain(fragment);
  });
});
