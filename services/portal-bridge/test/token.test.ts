import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { signJwt } from "../src/testing/fake-portal.js";
import { TOKEN_FILE } from "../src/token/store.js";
import { AUTH, CONNECTOR, type Harness, startHarness, USER } from "./helpers.js";

const auth = { authorization: `Bearer ${AUTH}` };

describe("upstream token: PUT/GET /api/token", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  const put = (payload: string | object, headers: Record<string, string> = auth) =>
    h.built.app.inject({
      method: "PUT",
      url: "/api/token",
      headers: {
        ...headers,
        "content-type": typeof payload === "string" ? "text/plain" : "application/json",
      },
      payload: typeof payload === "string" ? payload : JSON.stringify(payload),
    });

  it("reports the status in the contract's shape, never the token", async () => {
    h = await startHarness();
    const res = await h.built.app.inject({ method: "GET", url: "/api/token", headers: auth });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      token: {
        present: true,
        source: "env",
        user_id: "user-1",
        issued_at: "2026-11-23T07:00:00.000Z",
        expires_at: "2026-12-23T07:00:00.000Z",
        expires_in_s: 30 * 86_400,
      },
      upstream: {
        idle_timeout_s: 7200,
        last_budget_s: 7200,
        last_ok_at: "2026-11-23T07:00:00.000Z",
        last_error: null,
      },
      keepalive: {
        state: "running",
        interval_ms: 1_800_000,
        next_at: "2026-11-23T07:30:00.000Z",
        generation: 1,
        stopped_reason: null,
      },
    });
    expect(res.body).not.toContain(h.token as string);
  });

  it("refuses malformed and expired tokens with 422 and no upstream call", async () => {
    h = await startHarness();
    const before = h.portal.requests.length;
    const bad = await put("not-a-token");
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.code).toBe("malformed_token");
    const expired = signJwt({
      userId: "user-1",
      accountId: "acct-1",
      jti: "x",
      iat: 1,
      exp: Math.floor(h.clock.now() / 1000) - 1,
    });
    const res = await put({ token: expired });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe("expired_token");
    expect(res.body).not.toContain(expired);
    expect(h.portal.requests.length).toBe(before);
    const unknownField = await put({ token: expired, extra: 1 });
    expect(unknownField.statusCode).toBe(422);
    expect(unknownField.json().error).toMatchObject({ code: "validation_failed", field: "extra" });
  });

  it("maps the upstream check: 401 → 502 upstream_rejected, unreachable → 503 with Retry-After, other account → 409", async () => {
    h = await startHarness();
    const loggedOut = h.portal.login(USER);
    h.portal.logout(loggedOut);
    const rejected = await put(loggedOut);
    expect(rejected.statusCode).toBe(502);
    expect(rejected.json().error.code).toBe("upstream_rejected");

    const other = h.portal.login({ userId: "user-2", accountId: "acct-2" });
    const diff = await put(other);
    expect(diff.statusCode).toBe(409);
    expect(diff.json().error.code).toBe("different_account");

    h.portal.failNext = { count: 1, status: 503 };
    const fresh = h.portal.login(USER);
    const down = await put(fresh);
    expect(down.statusCode).toBe(503);
    expect(down.json().error.code).toBe("upstream_unavailable");
    expect(Number(down.headers["retry-after"])).toBeGreaterThan(0);

    // Nothing changed: the original token is still in use and nothing was saved.
    expect(h.built.tokens.token).toBe(h.token);
    expect(readdirSync(h.dataDir)).not.toContain(TOKEN_FILE);
  });

  it("accepts a live token of the same account: next request uses it, keep-alive restarts, saved 0600", async () => {
    h = await startHarness();
    // The old session lapses; the keep-alive stops for good on its 401.
    h.portal.sessions.clear();
    await h.clock.advance(1_800_000);
    await h.built.keepalive.settled();
    expect(h.built.keepalive.status().state).toBe("stopped");

    const fresh = h.portal.login(USER, { expInS: 40 * 86_400 });
    const res = await put(`jwt=${fresh}; Path=/\n`);
    expect(res.statusCode).toBe(200);
    expect(res.json().token).toMatchObject({ present: true, source: "put", user_id: "user-1" });
    expect(res.body).not.toContain(fresh);
    await h.built.keepalive.settled();
    expect(h.built.keepalive.status()).toMatchObject({ state: "running", stopped_reason: null });
    const ping = h.portal.requests.at(-1);
    expect(ping).toMatchObject({
      path: "/api/v3/authentication/refresh-session",
      authorization: `Bearer ${fresh}`,
    });

    const file = join(h.dataDir, TOKEN_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8")).token).toBe(fresh);
    expect(readdirSync(h.dataDir).filter((f) => f.endsWith(".tmp"))).toEqual([]);
  });

  it("needs MCP_AUTH_TOKEN: none → 401, the connector token → 403", async () => {
    h = await startHarness({ env: { MCP_CONNECTOR_TOKEN: CONNECTOR } });
    const none = await h.built.app.inject({ method: "GET", url: "/api/token" });
    expect(none.statusCode).toBe(401);
    expect(none.headers["www-authenticate"]).toMatch(/^Bearer/);
    const connector = await put(h.token as string, { "x-api-key": CONNECTOR });
    expect(connector.statusCode).toBe(403);
    expect(connector.json().error.code).toBe("forbidden");
  });
});

describe("startup token choice with a saved token", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  it("prefers a saved token of the same account with a later exp", async () => {
    let saved = "";
    h = await startHarness({
      before: ({ dataDir, portal }) => {
        saved = portal.login(USER, { expInS: 60 * 86_400 });
        writeFileSync(join(dataDir, TOKEN_FILE), JSON.stringify({ token: saved, saved_at: "x" }), {
          mode: 0o600,
        });
      },
    });
    expect(h.built.tokens.info).toMatchObject({ source: "state", token: saved });
    const startup = h.logs.text();
    expect(startup).toContain("token from state");
    expect(startup).not.toContain(saved);
  });

  it("keeps the environment token when the saved one belongs to another account", async () => {
    h = await startHarness({
      before: ({ dataDir, portal }) => {
        const other = portal.login({ userId: "user-9", accountId: "acct-9" }, { expInS: 90 * 86_400 });
        writeFileSync(join(dataDir, TOKEN_FILE), JSON.stringify({ token: other, saved_at: "x" }), {
          mode: 0o600,
        });
      },
    });
    expect(h.built.tokens.info?.source).toBe("env");
  });
});

describe("/token page", () => {
  let h: Harness;
  afterEach(async () => h?.close());

  it("shows a login form without the secret and the paste page with it (header or posted form)", async () => {
    h = await startHarness();
    const anon = await h.built.app.inject({ method: "GET", url: "/token" });
    expect(anon.statusCode).toBe(401);
    expect(anon.body).toContain('name="secret"');
    expect(anon.body).not.toContain("<textarea");

    const withHeader = await h.built.app.inject({ method: "GET", url: "/token", headers: auth });
    expect(withHeader.statusCode).toBe(200);
    expect(withHeader.body).toContain("<textarea");
    expect(withHeader.body).toContain("/api/token");
    expect(withHeader.headers["cache-control"]).toBe("no-store");

    const wrong = await h.built.app.inject({
      method: "POST",
      url: "/token",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: "secret=wrong",
    });
    expect(wrong.statusCode).toBe(401);
    const posted = await h.built.app.inject({
      method: "POST",
      url: "/token",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      payload: `secret=${encodeURIComponent(AUTH)}`,
    });
    expect(posted.statusCode).toBe(200);
    expect(posted.body).toContain("<textarea");
    expect(posted.body).not.toContain(h.token as string);
  });
});
