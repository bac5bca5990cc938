import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type BuiltApp, buildApp } from "../src/app.js";
import { envSpec } from "../src/config.js";

describe("event-gallery health", () => {
  let built: BuiltApp;
  let cleanup: () => Promise<void>;
  beforeAll(async () => {
    const env = await createTestEnv("event-gallery".replace(/-/g, "_"));
    cleanup = env.cleanup;
    const config = loadEnv(envSpec, { DATA_DIR: env.dataDir, DATABASE_URL: env.databaseUrl });
    built = await buildApp(config, { logger: captureLogger().logger });
  });
  afterAll(async () => {
    await built.app.close();
    await built.close();
    await cleanup();
  });

  it("answers /healthz with plain ok and nothing else", async () => {
    const res = await built.app.inject({ method: "GET", url: "/healthz" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
    expect(res.body).toBe("ok");
  });

  it("answers unknown API paths with the common 404 error body", async () => {
    const res = await built.app.inject({ method: "GET", url: "/api/v1/no/such/thing" });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: "not_found", message: expect.any(String) } });
  });
});
