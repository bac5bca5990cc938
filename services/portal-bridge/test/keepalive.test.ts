import { afterEach, describe, expect, it } from "vitest";
import { AUTH, type Harness, mcpClient, startHarness, USER } from "./helpers.js";

const MIN = 60_000;
const isPing = (r: { path: string }) => r.path === "/api/v3/authentication/refresh-session";

describe("keep-alive", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const pings = () => h.portal.requests.filter(isPing).length;
  const step = async (ms: number) => {
    await h.clock.advance(ms);
    await h.built.keepalive.settled();
  };

  it("pings from process start without any client, then every interval, logging the budget", async () => {
    h = await startHarness();
    expect(pings()).toBe(1);
    expect(h.built.keepalive.status()).toMatchObject({
      state: "running",
      next_at: "2026-11-23T07:30:00.000Z",
    });
    await step(29 * MIN);
    expect(pings()).toBe(1);
    await step(1 * MIN);
    expect(pings()).toBe(2);
    expect(h.logs.text()).toContain("budget 7200 s (120 min) left");
    // Eight hours on, the session is still alive because every ping slides the idle window.
    for (let i = 0; i < 16; i++) await step(30 * MIN);
    expect(pings()).toBe(18);
    expect(h.built.keepalive.upstreamStatus().last_budget_s).toBe(7200);
  });

  it("retries a transient failure after 5 minutes (state retrying), then runs again", async () => {
    h = await startHarness();
    h.portal.failNext = { count: 3, status: 503 };
    await step(30 * MIN);
    expect(h.built.keepalive.status()).toMatchObject({
      state: "retrying",
      next_at: "2026-11-23T07:35:00.000Z",
    });
    expect(h.built.keepalive.upstreamStatus().last_error).toMatch(/HTTP 503/);
    expect(h.logs.text()).toContain("retrying in 5 minutes");
    await step(5 * MIN);
    await step(5 * MIN);
    expect(h.built.keepalive.status().state).toBe("retrying");
    // Three consecutive failures fit in the 7200 s budget: the fourth try still finds the session.
    await step(5 * MIN);
    expect(h.built.keepalive.status()).toMatchObject({
      state: "running",
      next_at: "2026-11-23T08:15:00.000Z",
    });
    expect(h.built.keepalive.upstreamStatus()).toMatchObject({ last_budget_s: 7200, last_error: null });
  });

  it("stops for good on a 401 and says what to do; no further pings", async () => {
    h = await startHarness();
    h.portal.logout(h.token as string);
    await step(30 * MIN);
    expect(h.built.keepalive.status()).toMatchObject({
      state: "stopped",
      next_at: null,
      stopped_reason: "upstream session expired due to inactivity (401)",
    });
    expect(h.logs.text()).toMatch(/keep-alive stopped for good.*paste it at \/token/);
    const n = pings();
    await step(5 * 60 * MIN);
    expect(pings()).toBe(n);
  });

  it("is disabled by KEEPALIVE_INTERVAL_MS=0: no pings at all", async () => {
    h = await startHarness({ env: { KEEPALIVE_INTERVAL_MS: "0" } });
    expect(h.built.keepalive.status()).toMatchObject({ state: "disabled", interval_ms: 0, next_at: null });
    await step(3 * 60 * MIN);
    expect(pings()).toBe(0);
  });

  it("reports a lapsed session at start-up at once (server down for over two hours)", async () => {
    h = await startHarness({
      before: async ({ clock }) => {
        await clock.advance(2 * 60 * MIN + 1000);
      },
    });
    expect(h.built.keepalive.status().state).toBe("stopped");
    expect(h.logs.text()).toMatch(/expired due to inactivity \(401\)/);
  });

  it("a stale in-flight ping's 401 cannot stop the newer cycle (generation numbers)", async () => {
    h = await startHarness();
    const oldToken = h.token as string;
    const release = h.portal.hold((path) => isPing({ path }));
    await h.clock.advance(30 * MIN);
    const genBefore = h.built.keepalive.status().generation;
    // The browser tab logs the old session out while the ping is in flight; a new token arrives.
    h.portal.logout(oldToken);
    const fresh = h.portal.login(USER);
    const put = await h.built.app.inject({
      method: "PUT",
      url: "/api/token",
      headers: { authorization: `Bearer ${AUTH}`, "content-type": "text/plain" },
      payload: fresh,
    });
    expect(put.statusCode).toBe(200);
    expect(h.built.keepalive.status().generation).toBeGreaterThan(genBefore);
    release();
    await h.built.keepalive.settled();
    // Both pings were answered: the stale one with the 401, the new one with a budget.
    expect(h.built.keepalive.upstreamStatus().last_budget_s).toBe(7200);
    expect(h.built.keepalive.status()).toMatchObject({ state: "running", stopped_reason: null });
    expect(h.logs.text()).not.toContain("stopped for good");
  });

  it("stops at once when a tool call meets the 401 with the current token", async () => {
    h = await startHarness();
    await h.listen();
    h.portal.logout(h.token as string);
    const { client, close } = await mcpClient(`${h.url}/mcp`);
    const r = await client.callTool({ name: "list_tasks", arguments: {} });
    expect(r.isError).toBe(true);
    expect(JSON.stringify(r.content)).toMatch(/expired due to inactivity.*\/token/);
    expect(h.built.keepalive.status().state).toBe("stopped");
    await close();
  });
});
