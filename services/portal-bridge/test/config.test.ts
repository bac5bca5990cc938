import { ConfigError, loadEnv } from "@app/kit/config";
import { describe, expect, it } from "vitest";
import { checkConfig, envSpec, stateDirOf, timetableOrigin } from "../src/config.js";

const load = (env: Record<string, string>) => {
  const c = loadEnv(envSpec, env);
  checkConfig(c);
  return c;
};

const failure = (env: Record<string, string>): ConfigError => {
  try {
    load(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error("expected a ConfigError");
};

const LONG = "k".repeat(40);

describe("portal-bridge config", () => {
  it("has the documented defaults", () => {
    const c = load({});
    expect(c.PORT).toBe(3003);
    expect(c.KEEPALIVE_INTERVAL_MS).toBe(1_800_000);
    expect(c.UPSTREAM_TIMEOUT_MS).toBe(15_000);
    expect(c.MCP_AUTH_TOKEN).toBeUndefined();
    expect(c.PORTAL_BASE_URL).toBeUndefined();
    expect(stateDirOf(c)).toBe(c.DATA_DIR);
    expect(stateDirOf(load({ STATE_DIR: "/var/lib/bridge" }))).toBe("/var/lib/bridge");
    expect(load({ KEEPALIVE_INTERVAL_MS: "0" }).KEEPALIVE_INTERVAL_MS).toBe(0);
  });

  it("reads DIGEST_SCHEDULE and ALERT_WEBHOOK_FORMAT; a bad schedule is named, not echoed", () => {
    expect(load({ DIGEST_SCHEDULE: "Mon-Fri 06:45,Sun-Thu 18:00" }).DIGEST_SCHEDULE).toBe(
      "Mon-Fri 06:45,Sun-Thu 18:00",
    );
    const e = failure({ DIGEST_SCHEDULE: "Mondays at 7ish" });
    expect(e.variable).toBe("DIGEST_SCHEDULE");
    expect(e.message).toContain("HH:MM");
    expect(e.message).not.toContain("7ish");
    for (const f of ["json", "slack", "ntfy", "gotify"] as const)
      expect(load({ ALERT_WEBHOOK_FORMAT: f }).ALERT_WEBHOOK_FORMAT).toBe(f);
    expect(load({ ALERT_WEBHOOK_FORMAT: "text" }).ALERT_WEBHOOK_FORMAT).toBe("ntfy");
    expect(failure({ ALERT_WEBHOOK_FORMAT: "xml" }).variable).toBe("ALERT_WEBHOOK_FORMAT");
  });

  it("rejects a short connector token without echoing it", () => {
    const e = failure({ MCP_CONNECTOR_TOKEN: "short-connector-secret" });
    expect(e.variable).toBe("MCP_CONNECTOR_TOKEN");
    expect(e.message).toMatch(/at least 32/);
    expect(e.message).not.toContain("short-connector-secret");
  });

  it("rejects a connector token equal to the auth token, naming the rule not the value", () => {
    const e = failure({ MCP_AUTH_TOKEN: LONG, MCP_CONNECTOR_TOKEN: LONG });
    expect(e.variable).toBe("MCP_CONNECTOR_TOKEN");
    expect(e.message).toMatch(/must differ from MCP_AUTH_TOKEN/);
    expect(e.message).not.toContain(LONG);
  });

  it("requires MCP_PATH_SECRET to be at least 32 URL-safe characters", () => {
    const short = failure({ MCP_PATH_SECRET: "abc" });
    expect(short.variable).toBe("MCP_PATH_SECRET");
    expect(short.message).not.toContain("abc");
    const unsafe = `${"x".repeat(32)}/../`;
    const e = failure({ MCP_PATH_SECRET: unsafe });
    expect(e.message).toMatch(/URL-safe/);
    expect(e.message).not.toContain(unsafe);
    expect(load({ MCP_PATH_SECRET: `${"A1_-".repeat(8)}` }).MCP_PATH_SECRET).toHaveLength(32);
  });

  it("validates numbers, the portal origin and complete timetable settings", () => {
    expect(failure({ KEEPALIVE_INTERVAL_MS: "-5" }).variable).toBe("KEEPALIVE_INTERVAL_MS");
    expect(failure({ UPSTREAM_TIMEOUT_MS: "soon" }).variable).toBe("UPSTREAM_TIMEOUT_MS");
    expect(failure({ PORTAL_BASE_URL: "ftp://portal" }).variable).toBe("PORTAL_BASE_URL");
    expect(failure({ PORTAL_BASE_URL: "https://portal.example.org/api/v3" }).message).toMatch(/origin/);
    expect(failure({ TIMETABLE_SERVER: "school.webuntis.com" }).variable).toBe("TIMETABLE_SCHOOL");
    const secret = "not base32 !!";
    const e = failure({ TIMETABLE_SECRET: secret });
    expect(e.variable).toBe("TIMETABLE_SECRET");
    expect(e.message).not.toContain(secret);
  });

  it("reads TIMETABLE_SERVER as a bare host (https) or a full origin", () => {
    expect(timetableOrigin("school.webuntis.com")).toBe("https://school.webuntis.com");
    expect(timetableOrigin("http://127.0.0.1:9999/")).toBe("http://127.0.0.1:9999");
  });
});
