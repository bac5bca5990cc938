import { mkdir, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHECK_EVERY_MS } from "../src/alerts/alerts.js";
import { TOKEN_FILE } from "../src/token/store.js";
import { AUTH, type Harness, startHarness, USER } from "./helpers.js";

/** A webhook receiver (ntfy/Gotify/Slack stand-in) that records every POST. */
class Hook {
  readonly got: { type: string; body: string }[] = [];
  private server: Server | null = null;
  url = "";
  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.got.push({ type: String(req.headers["content-type"]), body: Buffer.concat(chunks).toString() });
        res.writeHead(200).end("ok");
      });
    });
    await new Promise<void>((r) => this.server?.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/topic-s3cret`;
    return this.url;
  }
  events(): string[] {
    return this.got.map((g) => (JSON.parse(g.body) as { event: string }).event);
  }
  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

const putToken = (h: Harness, token: string) =>
  h.built.app.inject({
    method: "PUT",
    url: "/api/token",
    headers: { authorization: `Bearer ${AUTH}`, "content-type": "text/plain" },
    payload: token,
  });

const readyz = async (h: Harness) => {
  const res = await h.built.app.inject({ method: "GET", url: "/readyz" });
  return { status: res.statusCode, body: res.body };
};

describe("keep-alive alerts and readiness", () => {
  let h: Harness;
  const hook = new Hook();
  beforeAll(async () => {
    await hook.start();
    h = await startHarness({ env: { ALERT_WEBHOOK_URL: hook.url } });
    await h.built.alerts?.settled();
  });
  afterAll(async () => {
    await h.close();
    await hook.stop();
  });

  it("is ready with a live session; alerts once when the keep-alive stops, once on recovery", async () => {
    expect(await readyz(h)).toEqual({ status: 200, body: "ok" });
    expect(hook.got).toEqual([]);
    // A browser tab logs the shared session out; the next ping meets the 401.
    h.portal.logout(h.token as string);
    await h.clock.advance(30 * 60_000);
    await h.built.keepalive.settled();
    await h.built.alerts?.settled();
    expect(h.built.keepalive.status().state).toBe("stopped");
    expect(hook.events()).toEqual(["keepalive_stopped"]);
    const first = JSON.parse(hook.got[0]?.body ?? "{}") as { message: string; at: string };
    expect(hook.got[0]?.type).toBe("application/json");
    expect(first.message).toContain("the keep-alive stopped");
    expect(first.message).toContain("paste it at /token");
    expect(first.at).toBe(h.clock.iso());
    const r = await readyz(h);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: "upstream_session_dead" } });
    expect(r.body).not.toContain(USER.userId);

    // Hours of checks: still one alert.
    await h.clock.advance(4 * CHECK_EVERY_MS);
    await h.built.alerts?.settled();
    expect(hook.events()).toEqual(["keepalive_stopped"]);

    // A fresh token: the keep-alive runs again, one "recovered".
    expect((await putToken(h, h.portal.login(USER))).statusCode).toBe(200);
    await h.built.keepalive.settled();
    await h.built.alerts?.settled();
    expect(hook.events()).toEqual(["keepalive_stopped", "recovered"]);
    expect(await readyz(h)).toEqual({ status: 200, body: "ok" });
    // The webhook URL (it can hold a secret topic) is never logged.
    expect(h.logs.text()).not.toContain("topic-s3cret");
    expect(h.logs.text()).toContain("alert sent: keepalive_stopped");
  });
});

describe("token expiry alerts (fake clock) and the text format", () => {
  let h: Harness;
  const hook = new Hook();
  beforeAll(async () => {
    await hook.start();
    h = await startHarness({
      env: { ALERT_WEBHOOK_URL: hook.url, ALERT_WEBHOOK_FORMAT: "text", KEEPALIVE_INTERVAL_MS: "0" },
    });
    await h.built.alerts?.settled();
  });
  afterAll(async () => {
    await h.close();
    await hook.stop();
  });

  it("warns once under 3 days, is not ready under 24 h, and recovers on a new token", async () => {
    const exp = Date.parse(h.built.tokens.status().expires_at as string);
    expect(await readyz(h)).toEqual({ status: 200, body: "ok" }); // a disabled keep-alive is a choice
    // Just over 3 days left: nothing yet. Then the periodic check crosses the line.
    h.clock.set(exp - 3 * 86_400_000 - 2 * CHECK_EVERY_MS);
    await h.clock.advance(CHECK_EVERY_MS);
    await h.built.alerts?.settled();
    expect(hook.got).toHaveLength(0);
    await h.clock.advance(2 * CHECK_EVERY_MS);
    await h.built.alerts?.settled();
    expect(hook.got).toHaveLength(1);
    expect(hook.got[0]?.type).toBe("text/plain; charset=utf-8");
    expect(hook.got[0]?.body).toMatch(
      /^portal-bridge: the portal token expires \w{3} \d{4}-\d\d-\d\d \d\d:\d\d \(Europe\/Berlin\) \(in 2 d 23 h\)\. .*paste a fresh jwt cookie at \/token/,
    );
    // A day of checks later: still one message; under 24 h readiness turns 503.
    await h.clock.advance(86_400_000);
    await h.built.alerts?.settled();
    expect(hook.got).toHaveLength(1);
    expect(await readyz(h)).toEqual({ status: 200, body: "ok" });
    await h.clock.advance(86_400_000);
    const r = await readyz(h);
    expect(r.status).toBe(503);
    expect(JSON.parse(r.body)).toMatchObject({ error: { code: "token_expiring" } });

    expect((await putToken(h, h.portal.login(USER))).statusCode).toBe(200);
    await h.built.alerts?.settled();
    expect(hook.got).toHaveLength(2);
    expect(hook.got[1]?.body).toMatch(/^portal-bridge: recovered \(token expiring no longer applies\)/);
    expect(await readyz(h)).toEqual({ status: 200, body: "ok" });
  });
});

describe("readiness without a token, and the saved-token file", () => {
  it("answers 503 no_token when there is no token", async () => {
    const h = await startHarness({ withToken: false });
    try {
      const r = await readyz(h);
      expect(r.status).toBe(503);
      expect(JSON.parse(r.body)).toEqual({
        error: { code: "no_token", message: "No portal token is configured; paste one at /token." },
      });
    } finally {
      await h.close();
    }
  });

  it("logs a corrupt saved-token file without its content, and a directory in one line", async () => {
    const junk = "eyJhbGciOi-corrupt-token-fragment";
    const corrupt = await startHarness({
      before: ({ dataDir }) => writeFile(join(dataDir, TOKEN_FILE), `{"token":"${junk}`),
    });
    try {
      expect(corrupt.logs.text()).toContain(`the saved token file STATE_DIR/${TOKEN_FILE} is corrupt`);
      expect(corrupt.logs.text()).not.toContain(junk);
      expect(corrupt.built.tokens.status().source).toBe("env");
    } finally {
      await corrupt.close();
    }
    const dir = await startHarness({
      before: ({ dataDir }) => mkdir(join(dataDir, TOKEN_FILE)),
    });
    try {
      const lines = dir.logs.lines.filter((l) => l.includes("is a directory"));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`STATE_DIR/${TOKEN_FILE} is a directory`);
      expect(lines[0]).not.toContain(dir.dataDir);
    } finally {
      await dir.close();
    }
  });
});
