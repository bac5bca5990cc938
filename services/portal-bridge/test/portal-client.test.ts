import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { FakeClock } from "@app/kit/clock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createFakePortal } from "../src/testing/fake-portal.js";
import { assertAllowed, createPortalClient, type PortalClient, PortalError } from "../src/upstream/portal.js";
import { USER as USER_FIXTURE } from "./helpers.js";

describe("portal client", () => {
  const clock = new FakeClock("2026-11-23T07:00:00.000Z");
  const portal = createFakePortal({ clock: clock });
  let token: string;
  let client: PortalClient;
  beforeAll(async () => {
    await portal.start();
    token = portal.login(USER_FIXTURE);
    client = createPortalClient({ baseUrl: portal.url, timeoutMs: 5000, clock, currentToken: () => token });
  });
  afterAll(async () => portal.stop());

  it("sends the token as a bearer header and reads JSON", async () => {
    const me = await client.getJson<{ user: { id: string } }>("/api/v3/me");
    expect(me.user.id).toBe("user-1");
    const seen = portal.requests.at(-1);
    expect(seen).toMatchObject({ method: "GET", path: "/api/v3/me", authorization: `Bearer ${token}` });
  });

  it("can send only GET and the refresh-session POST, refused before any network call", async () => {
    const before = portal.requests.length;
    for (const [m, p] of [
      ["POST", "/api/v3/logout"],
      ["POST", "/api/v3/authentication/local"],
      ["PUT", "/api/v3/me"],
      ["DELETE", "/api/v3/me"],
      ["PATCH", "/api/v3/me"],
      ["GET", "/v3/me"],
      ["GET", "/api/v3/../admin"],
      ["POST", "/api/v3/authentication/refresh-session/../../logout"],
    ] as const)
      expect(() => assertAllowed(m, p), `${m} ${p}`).toThrow(PortalError);
    expect(() => assertAllowed("GET", "/api/v3/me")).not.toThrow();
    expect(() => assertAllowed("POST", "/api/v3/authentication/refresh-session")).not.toThrow();
    await expect(client.getJson("/api/v3/../x")).rejects.toMatchObject({ kind: "forbidden_request" });
    expect(portal.requests.length).toBe(before);
    expect(await client.refreshSession()).toBe(7200);
    expect(portal.requests.at(-1)).toMatchObject({
      method: "POST",
      path: "/api/v3/authentication/refresh-session",
    });
  });

  it("tells the inactivity 401 from other 401s and from other HTTP errors", async () => {
    const idle = portal.login({ userId: "u9", accountId: "a9" });
    await clock.advance(7201_000);
    await expect(client.getJson("/api/v3/me", {}, { token: idle })).rejects.toMatchObject({
      kind: "session_expired",
      status: 401,
      isAuthFailure: true,
    });
    await expect(client.getJson("/api/v3/me", {}, { token: "x.y.z" })).rejects.toMatchObject({
      kind: "unauthorized",
    });
    token = portal.login(USER_FIXTURE);
    await expect(client.getJson("/api/v3/nope")).rejects.toMatchObject({
      kind: "http",
      status: 404,
      isTransient: false,
    });
    portal.failNext = { count: 1, status: 502 };
    await expect(client.getJson("/api/v3/me")).rejects.toMatchObject({
      kind: "http",
      status: 502,
      isTransient: true,
    });
  });

  it("maps network failures and timeouts (on the injected clock)", async () => {
    const dead = createPortalClient({
      baseUrl: "http://127.0.0.1:1",
      timeoutMs: 5000,
      clock,
      currentToken: () => token,
    });
    await expect(dead.getJson("/api/v3/me")).rejects.toMatchObject({ kind: "network", isTransient: true });

    const hanging: Server = createServer(() => {});
    await new Promise<void>((r) => hanging.listen(0, "127.0.0.1", r));
    const slow = createPortalClient({
      baseUrl: `http://127.0.0.1:${(hanging.address() as AddressInfo).port}`,
      timeoutMs: 5000,
      clock,
      currentToken: () => token,
    });
    const p = slow.getJson("/api/v3/me");
    const settled = p.catch((e) => e);
    await clock.advance(5000);
    expect(await settled).toMatchObject({ kind: "timeout", isTransient: true });
    hanging.closeAllConnections();
    hanging.close();
  });

  it("refuses to read a JSON answer over 10 MiB (declared or streamed)", async () => {
    const big = (withLength: boolean) => async () => {
      const chunk = new Uint8Array(1024 * 1024).fill(32);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(c) {
          if (sent++ < 11) c.enqueue(chunk);
          else c.close();
        },
      });
      return new Response(body, {
        status: 200,
        headers: withLength ? { "content-length": String(11 * 1024 * 1024) } : {},
      });
    };
    for (const withLength of [true, false]) {
      const c = createPortalClient({
        baseUrl: "http://portal.invalid",
        timeoutMs: 5000,
        clock,
        currentToken: () => token,
        fetch: big(withLength),
      });
      await expect(c.getJson("/api/v3/tasks")).rejects.toMatchObject({ kind: "too_large" });
    }
  });

  it("without PORTAL_BASE_URL answers 'not configured'; without a token 'no token'", async () => {
    const none = createPortalClient({
      baseUrl: undefined,
      timeoutMs: 5000,
      clock,
      currentToken: () => token,
    });
    expect(none.configured).toBe(false);
    await expect(none.getJson("/api/v3/me")).rejects.toMatchObject({ kind: "not_configured" });
    const noToken = createPortalClient({
      baseUrl: portal.url,
      timeoutMs: 5000,
      clock,
      currentToken: () => null,
    });
    await expect(noToken.getJson("/api/v3/me")).rejects.toMatchObject({ kind: "no_token" });
  });
});
