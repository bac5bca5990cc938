import { parsePrometheus, sampleValue } from "@app/kit/testing/metrics";
import { afterEach, describe, expect, it } from "vitest";
import { AUTH, type Harness, PATH_SECRET, startHarness, USER } from "./helpers.js";

const METRICS = "bridge-metrics-token-0123456";

describe("portal-bridge /metrics", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const scrape = async () => {
    const res = await h.built.app.inject({
      method: "GET",
      url: "/metrics",
      headers: { authorization: `Bearer ${METRICS}` },
    });
    expect(res.statusCode).toBe(200);
    return { text: res.body, samples: parsePrometheus(res.body) };
  };

  it("is guarded by METRICS_TOKEN; the MCP secret does not open it", async () => {
    h = await startHarness({ env: { METRICS_TOKEN: METRICS } });
    for (const headers of [{}, { authorization: `Bearer ${AUTH}` }]) {
      const res = await h.built.app.inject({ method: "GET", url: "/metrics", headers });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe("unauthorized");
    }
  });

  it("labels the path-secret route by its pattern and logs no path", async () => {
    h = await startHarness({ env: { METRICS_TOKEN: METRICS, MCP_PATH_SECRET: PATH_SECRET } });
    const base = await h.listen();
    const res = await fetch(`${base}/${PATH_SECRET}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(res.status).toBe(200);
    await res.text();
    const { text, samples } = await scrape();
    expect(sampleValue(samples, "http_requests_total", { method: "POST", route: "/:pathSecret/mcp" })).toBe(
      1,
    );
    expect(text).not.toContain(PATH_SECRET);
    expect(h.logs.text()).not.toContain(PATH_SECRET);
    const lines = h.logs.lines.map((l) => JSON.parse(l) as { msg: string; route?: string; level: number });
    expect(lines.filter((l) => l.msg === "request").map((l) => [l.route, l.level])).toEqual([
      ["/:pathSecret/mcp", 30],
      ["/metrics", 20],
    ]);
  });

  it("moves the token, keep-alive and session gauges with real state", async () => {
    h = await startHarness({ withToken: false, env: { METRICS_TOKEN: METRICS } });
    let s = (await scrape()).samples;
    expect(sampleValue(s, "bridge_token_present")).toBe(0);
    expect(sampleValue(s, "bridge_token_seconds_left")).toBe(0);
    expect(sampleValue(s, "bridge_keepalive_state", { state: "running" })).toBe(0);
    expect(sampleValue(s, "bridge_mcp_sessions")).toBe(0);

    const token = h.portal.login(USER);
    const put = await h.built.app.inject({
      method: "PUT",
      url: "/api/token",
      headers: { authorization: `Bearer ${AUTH}`, "content-type": "text/plain" },
      payload: token,
    });
    expect(put.statusCode).toBe(200);
    await h.built.keepalive.settled();
    s = (await scrape()).samples;
    expect(sampleValue(s, "bridge_token_present")).toBe(1);
    const left = sampleValue(s, "bridge_token_seconds_left") ?? 0;
    expect(left).toBe(h.built.tokens.status().expires_in_s);
    expect(left).toBeGreaterThan(0);
    expect(sampleValue(s, "bridge_keepalive_state", { state: "running" })).toBe(1);
    await h.clock.advance(60_000);
    expect(sampleValue((await scrape()).samples, "bridge_token_seconds_left")).toBe(left - 60);

    const base = await h.listen();
    const init = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${AUTH}`,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "m", version: "1" } },
      }),
    });
    expect(init.status).toBe(200);
    await init.text();
    expect(sampleValue((await scrape()).samples, "bridge_mcp_sessions")).toBe(1);
  });

  it("is open when METRICS_TOKEN is unset", async () => {
    h = await startHarness();
    const res = await h.built.app.inject({ method: "GET", url: "/metrics" });
    expect(res.statusCode).toBe(200);
    expect(sampleValue(parsePrometheus(res.body), "bridge_token_present")).toBe(1);
  });
});
