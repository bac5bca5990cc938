import { FakeClock } from "@app/kit/clock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRateLimiter } from "../../src/limits/limiter.js";
import { type Gallery, startGallery } from "./harness.js";

describe("media tokens and client IPs", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
    // Test-only routes standing in for the media routes (registered before the app is ready).
    const { app, ctx } = g.built;
    app.get("/test/media", async (req) => {
      const u = await ctx.auth.requireUser(req, { allowMediaToken: true });
      return { id: u.id };
    });
    app.get("/test/media-token", async (req) => ({
      t: await ctx.auth.mediaToken(await ctx.auth.requireUser(req)),
    }));
    app.get("/test/ip", async (req) => ({ ip: ctx.auth.clientIp(req) }));
  });
  afterAll(async () => {
    await g.close();
  });

  const get = (url: string, headers: Record<string, string> = {}) =>
    g.built.app.inject({ method: "GET", url, headers });

  it("accepts ?t= only where allowed, only as a media token, only while the session lives", async () => {
    const u = await g.join("Viewer");
    const t = (await get("/test/media-token", { authorization: `Bearer ${u.token}` })).json().t as string;
    expect(t).not.toBe(u.token);
    const ok = await get(`/test/media?t=${t}`);
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ id: u.id });
    // The session token itself is not a media token, and media tokens are not sessions.
    expect((await get(`/test/media?t=${u.token}`)).statusCode).toBe(401);
    expect((await get("/api/v1/me/context", { authorization: `Bearer ${t}` })).statusCode).toBe(401);
    expect((await get(`/api/v1/me/context?t=${t}`)).statusCode).toBe(401);
    // Short-lived.
    await g.clock.advance(2 * 3600_000);
    expect((await get(`/test/media?t=${t}`)).statusCode).toBe(401);
    // Bound to a live session.
    const t2 = (await get("/test/media-token", { authorization: `Bearer ${u.token}` })).json().t as string;
    expect((await get(`/test/media?t=${t2}`)).statusCode).toBe(200);
    await g.call("DELETE", "/session", { token: u.token });
    expect((await get(`/test/media?t=${t2}`)).statusCode).toBe(401);
  });

  it("with TRUST_PROXY=1 takes the right-most X-Forwarded-For hop, else the peer address", async () => {
    expect((await get("/test/ip", { "x-forwarded-for": "1.1.1.1, 2.2.2.2 , 3.3.3.3" })).json().ip).toBe(
      "3.3.3.3",
    );
    expect((await get("/test/ip", { "x-forwarded-for": "4.4.4.4" })).json().ip).toBe("4.4.4.4");
    expect((await get("/test/ip")).json().ip).toBe("127.0.0.1");
  });

  it("without TRUST_PROXY ignores X-Forwarded-For", async () => {
    const plain = await startGallery({ env: { TRUST_PROXY: "" } });
    try {
      plain.built.app.get("/test/ip", async (req) => ({ ip: plain.built.ctx.auth.clientIp(req) }));
      const res = await plain.built.app.inject({
        url: "/test/ip",
        headers: { "x-forwarded-for": "4.4.4.4" },
      });
      expect(res.json().ip).toBe("127.0.0.1");
    } finally {
      await plain.close();
    }
  });
});

describe("rate limiter", () => {
  it("counts hits per key in a window, checks without counting, and reports Retry-After", async () => {
    const clock = new FakeClock();
    const limiter = createRateLimiter(clock);
    await limiter.hit("a", 2, 60_000);
    await limiter.check("a", 2, 60_000);
    await limiter.hit("a", 2, 60_000);
    await expect(limiter.check("a", 2, 60_000, "too_many_attempts")).rejects.toThrowError(
      expect.objectContaining({ status: 429, code: "too_many_attempts" }),
    );
    await clock.advance(20_000);
    let err: unknown;
    try {
      await limiter.hit("a", 2, 60_000);
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ status: 429, code: "rate_limited", headers: { "retry-after": "40" } });
    await limiter.hit("b", 2, 60_000);
    await clock.advance(40_000);
    await limiter.hit("a", 2, 60_000);
  });

  it("is bounded: prunes expired keys, and refuses new keys when still full", async () => {
    const clock = new FakeClock();
    const limiter = createRateLimiter(clock, { maxKeys: 3 });
    await limiter.hit("k1", 5, 10_000);
    await limiter.hit("k2", 5, 60_000);
    await limiter.hit("k3", 5, 60_000);
    await expect(limiter.hit("k4", 5, 60_000)).rejects.toThrowError(expect.objectContaining({ status: 429 }));
    // Existing keys keep working at the bound.
    await limiter.hit("k2", 5, 60_000);
    await clock.advance(10_000);
    await limiter.hit("k4", 5, 60_000);
    expect(limiter.size()).toBe(3);
  });
});

describe("admin login limits", () => {
  it("rate-limits admin login attempts per IP and never answers by name", async () => {
    const g = await startGallery();
    try {
      const ip = "198.51.100.40";
      for (let i = 0; i < 10; i++) {
        const res = await g.call("POST", "/admin/login", { body: { password: `guess ${i}` }, ip });
        expect(res.statusCode).toBe(401);
        expect(res.json().error.code).toBe("invalid_credentials");
      }
      const limited = await g.call("POST", "/admin/login", {
        body: { password: "correct horse battery staple" },
        ip,
      });
      expect(limited.statusCode).toBe(429);
      expect(limited.headers["retry-after"]).toBeDefined();
      const unknownField = await g.call("POST", "/admin/login", { body: { password: "x", name: "Admin" } });
      expect(unknownField.statusCode).toBe(422);
      expect(unknownField.json().error.field).toBe("name");
    } finally {
      await g.close();
    }
  });
});
