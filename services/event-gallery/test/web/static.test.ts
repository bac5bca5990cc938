import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createHttpApp } from "@app/kit/http";
import { captureLogger } from "@app/kit/logger";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { APP_ROUTES } from "../../src/http/app-routes.js";
import { registerWebApp } from "../../src/http/routes/web.js";

/** Serving the built web app: files, the single-page fallback, and X-Frame-Options everywhere. */
describe("web app serving", () => {
  let app: FastifyInstance;
  const dir = mkdtempSync(join(tmpdir(), "gallery-web-"));

  beforeAll(async () => {
    mkdirSync(join(dir, "assets"));
    writeFileSync(join(dir, "index.html"), "<!doctype html><title>app</title>");
    writeFileSync(join(dir, "assets", "index-abc123.js"), "console.log(1)");
    app = createHttpApp({ logger: captureLogger().logger });
    await registerWebApp(app, { dir });
    app.get("/api/v1/export/status", async () => ({ ok: true }));
    app.get("/api/v1/feed", async () => ({ items: [] }));
    await app.ready();
  });
  afterAll(async () => {
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("serves index.html for every page the app declares, never cached (direct load, reload, deep link)", async () => {
    expect(APP_ROUTES).toContain("/host/card");
    for (const url of [...APP_ROUTES, "/slideshow?x=1", "/host/card?print=1#top"]) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers["content-type"]).toMatch(/^text\/html/);
      expect(res.body).toContain("<title>app</title>");
      expect(res.headers["cache-control"]).toBe("no-cache");
      expect(res.headers["x-frame-options"]).toBe("DENY");
    }
  });

  it("the app links and navigates only to declared pages, and routes each one", () => {
    const src = fileURLToPath(new URL("../../web/src/", import.meta.url));
    const files = readdirSync(src, { recursive: true, encoding: "utf8" }).filter((f) => /\.tsx?$/.test(f));
    const used = new Set<string>();
    for (const f of files) {
      const text = readFileSync(join(src, f), "utf8");
      for (const m of text.matchAll(/(?:navigate\(|href=|path === )"(\/[^"#?]*)"/g)) used.add(m[1] as string);
    }
    expect(used.size).toBeGreaterThan(3);
    for (const path of used) expect(APP_ROUTES, path).toContain(path);
  });

  it("serves fingerprinted assets as immutable", async () => {
    const res = await app.inject({ url: "/assets/index-abc123.js" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe("console.log(1)");
    expect(res.headers["cache-control"]).toContain("immutable");
  });

  it("answers every other path with the JSON 404, never with the app", async () => {
    for (const url of [
      "/api/v1/nothing",
      "/api/v2",
      "/media/x.jpg",
      "/%6Dedia/x.jpg",
      "/no/such/thing",
      "/host/x",
    ]) {
      const res = await app.inject({ url });
      expect(res.statusCode, url).toBe(404);
      expect(res.json().error.code).toBe("not_found");
      expect(res.headers["x-frame-options"]).toBe("DENY");
    }
  });

  it("lets only the export endpoints be framed by the same origin", async () => {
    expect((await app.inject({ url: "/api/v1/export/status" })).headers["x-frame-options"]).toBe(
      "SAMEORIGIN",
    );
    expect((await app.inject({ url: "/api/v1/feed" })).headers["x-frame-options"]).toBe("DENY");
  });
});
