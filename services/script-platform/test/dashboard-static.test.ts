import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { createHttpApp } from "@app/kit/http";
import { captureLogger } from "@app/kit/logger";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.js";
import { envSpec } from "../src/config.js";
import { registerDashboard } from "../src/http/routes/dashboard.js";

// A stand-in build output, so this file does not depend on (or race with) a real `vite build`.
const INDEX =
  '<!doctype html><div id="root"></div><script type="module" src="/admin/assets/index-abc123.js"></script>';
const BUNDLE = "console.log('dashboard');";

describe("dashboard static serving", () => {
  let dir: string;
  let app: FastifyInstance;
  let bare: FastifyInstance;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "dashboard-static-"));
    await mkdir(join(dir, "dist", "assets"), { recursive: true });
    await writeFile(join(dir, "dist", "index.html"), INDEX);
    await writeFile(join(dir, "dist", "assets", "index-abc123.js"), BUNDLE);
    app = createHttpApp({ logger: captureLogger().logger });
    await registerDashboard(app, { root: join(dir, "dist") });
    app.get("/api/v1/admin/me", async () => ({ admin: null }));
    await app.ready();
    bare = createHttpApp({ logger: captureLogger().logger });
    await registerDashboard(bare, { root: join(dir, "missing") });
    await bare.ready();
  });
  afterAll(async () => {
    await app.close();
    await bare.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("serves index.html at /admin/ without caching and with a restrictive CSP", async () => {
    const res = await app.inject({ method: "GET", url: "/admin/" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    expect(res.body).toBe(INDEX);
    expect(res.headers["cache-control"]).toBe("no-cache");
    expect(res.headers["content-security-policy"]).toContain("default-src 'self'");
    expect(res.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(res.headers["x-frame-options"]).toBe("DENY");
  });

  it("redirects /admin to /admin/", async () => {
    const res = await app.inject({ method: "GET", url: "/admin" });
    expect(res.statusCode).toBe(308);
    expect(res.headers.location).toBe("/admin/");
  });

  it("serves hashed assets as immutable JavaScript", async () => {
    const res = await app.inject({ method: "GET", url: "/admin/assets/index-abc123.js" });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/javascript/);
    expect(res.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(res.body).toBe(BUNDLE);
  });

  it("answers client-side routes with index.html (SPA fallback), including deep paths", async () => {
    for (const url of ["/admin/apps", "/admin/apps/0193/scripts/new", "/admin/login?next=%2F"]) {
      const res = await app.inject({ method: "GET", url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers["content-type"], url).toMatch(/^text\/html/);
      expect(res.body, url).toBe(INDEX);
      expect(res.headers["cache-control"], url).toBe("no-cache");
    }
  });

  it("answers a missing asset file with a JSON 404, not the HTML shell", async () => {
    const res = await app.inject({ method: "GET", url: "/admin/assets/index-gone.js" });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: { code: "not_found", message: expect.any(String) } });
  });

  it("never falls back for the API or other paths", async () => {
    const api = await app.inject({ method: "GET", url: "/api/v1/admin/me" });
    expect(api.json()).toEqual({ admin: null });
    const unknownApi = await app.inject({ method: "GET", url: "/api/v1/admin/nothing-here" });
    expect(unknownApi.statusCode).toBe(404);
    expect(unknownApi.headers["content-type"]).toMatch(/^application\/json/);
    const other = await app.inject({ method: "GET", url: "/administrator" });
    expect(other.statusCode).toBe(404);
    expect(other.body).not.toContain("<!doctype html>");
  });

  it("answers 404 dashboard_not_built when the build output is missing", async () => {
    const res = await bare.inject({ method: "GET", url: "/admin/apps" });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe("dashboard_not_built");
    expect(res.json().error.message).not.toContain("/");
  });
});

describe("dashboard route inside the platform app", () => {
  it("redirects /admin and leaves /api/v1/admin/* to the API", async () => {
    const env = await createTestEnv("script_platform");
    const config = loadEnv(envSpec, { DATA_DIR: env.dataDir, DATABASE_URL: env.databaseUrl });
    const built = await buildApp(config, { logger: captureLogger().logger, announce: () => {} });
    try {
      const redirect = await built.app.inject({ method: "GET", url: "/admin" });
      expect(redirect.statusCode).toBe(308);
      expect(redirect.headers.location).toBe("/admin/");
      const me = await built.app.inject({ method: "GET", url: "/api/v1/admin/me" });
      expect(me.statusCode).toBe(401);
      expect(me.json().error.code).toBe("unauthorized");
    } finally {
      await built.app.close();
      await built.close();
      await env.cleanup();
    }
  });
});
