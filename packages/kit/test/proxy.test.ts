import { describe, expect, it } from "vitest";
import { ConfigError, loadEnv } from "../src/config.js";
import {
  clientAddress,
  fastifyTrustProxy,
  isHttps,
  proxyEnv,
  publicOrigin,
  requestOrigin,
  type TrustProxy,
} from "../src/http/proxy.js";
import { createHttpApp } from "../src/http.js";
import { captureLogger } from "../src/logger.js";

const spec = proxyEnv();
const trust = (v: string | undefined) => loadEnv(spec, { TRUST_PROXY: v }).TRUST_PROXY;

describe("TRUST_PROXY and BASE_PATH", () => {
  it("parses off, a hop count and a list of addresses/CIDRs", () => {
    expect(trust(undefined)).toBe(false);
    expect(trust("")).toBe(false);
    expect(trust("false")).toBe(false);
    expect(trust("1")).toBe(1);
    expect(trust("10.0.0.0/8, 192.168.1.7 ,::1")).toEqual(["10.0.0.0/8", "192.168.1.7", "::1"]);
    expect(trust("loopback")).toEqual(["loopback"]);
  });

  it("refuses anything else with one line naming the variable, never the value", () => {
    for (const bad of ["yes", "10.0.0.0/99", "not-an-ip", "1.2.3", "-1", "1,,x"]) {
      let err: unknown;
      try {
        trust(bad);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      const msg = (err as Error).message;
      expect(msg).toContain("TRUST_PROXY");
      expect(msg).toContain("hop count");
      expect(msg).not.toContain(bad);
    }
  });

  it("BASE_PATH refuses to start when set, with one line saying what to do", () => {
    expect(loadEnv(spec, {}).BASE_PATH).toBeUndefined();
    expect(loadEnv(spec, { BASE_PATH: "/" }).BASE_PATH).toBe("/");
    expect(() => loadEnv(spec, { BASE_PATH: "/gallery" })).toThrowError(
      /BASE_PATH .*not supported: serve each service at the root of its own host name/,
    );
  });
});

async function appWith(t: TrustProxy) {
  const app = createHttpApp({
    logger: captureLogger().logger,
    fastify: { trustProxy: fastifyTrustProxy(t) },
  });
  app.get("/who", async (req) => ({
    ip: clientAddress(req),
    https: isHttps(req),
    origin: requestOrigin(req),
    public: publicOrigin(req, null),
    configured: publicOrigin(req, "https://fixed.example/"),
  }));
  await app.ready();
  return app;
}

const forwarded = {
  host: "10.1.1.1:3001",
  "x-forwarded-for": "203.0.113.9, 198.51.100.4",
  "x-forwarded-proto": "https",
  "x-forwarded-host": "photos.example.org",
};

describe("forwarded headers through Fastify's trustProxy", () => {
  it("off: ignores every forwarded header", async () => {
    const app = await appWith(false);
    const r = (await app.inject({ url: "/who", headers: forwarded })).json();
    expect(r).toEqual({
      ip: "127.0.0.1",
      https: false,
      origin: "http://10.1.1.1:3001",
      public: "http://10.1.1.1:3001",
      configured: "https://fixed.example",
    });
    await app.close();
  });

  it("one hop: the right-most address, the proxy's protocol and host", async () => {
    const app = await appWith(1);
    const r = (await app.inject({ url: "/who", headers: forwarded })).json();
    expect(r).toMatchObject({ ip: "198.51.100.4", https: true, origin: "https://photos.example.org" });
    await app.close();
  });

  it("a list: only listed peers are believed, and hops are walked while they are trusted", async () => {
    const listed = await appWith(["127.0.0.1", "198.51.100.0/24"]);
    expect((await listed.inject({ url: "/who", headers: forwarded })).json()).toMatchObject({
      ip: "203.0.113.9",
      https: true,
    });
    await listed.close();
    const other = await appWith(["10.0.0.0/8"]);
    expect((await other.inject({ url: "/who", headers: forwarded })).json()).toMatchObject({
      ip: "127.0.0.1",
      https: false,
      origin: "http://10.1.1.1:3001",
    });
    await other.close();
  });
});
