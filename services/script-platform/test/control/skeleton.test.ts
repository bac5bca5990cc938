import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_APP_ID, HELLO_SCRIPT_ID } from "../../src/db/migrations/0001_control_plane.js";
import { migrations } from "../../src/db/migrations/index.js";
import { type Harness, startHarness } from "./harness.js";

describe("control plane skeleton", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  it("seeds the default app with a localhost claim and the hello route on a fresh install", async () => {
    const app = await h.built.ctx.apps.resolve("default");
    expect(app.id).toBe(DEFAULT_APP_ID);
    const m = h.built.ctx.routeTable.match("localhost:3002", "GET", "/hello");
    expect(m).toMatchObject({ app_id: DEFAULT_APP_ID, script_id: HELLO_SCRIPT_ID, params: {}, rest: "" });
    expect(h.built.ctx.routeTable.match("localhost", "POST", "/hello")).toBeNull();
    expect(h.built.ctx.routeTable.match("unknown.example", "GET", "/hello")).toBeNull();
    const script = await h.built.ctx.scripts.byId(HELLO_SCRIPT_ID);
    expect(script).toMatchObject({ name: "hello", kind: "endpoint", timeout_seconds: 30, sandbox: {} });
  });

  it("answers /version with the latest migration number", async () => {
    const res = await h.call("GET", "/version", undefined, null);
    expect(res.statusCode).toBe(200);
    const v = res.json();
    expect(v).toEqual({
      product: expect.stringMatching(/^\d+\.\d+\.\d+$/),
      sdk: "1.7",
      api: 1,
      schema: migrations.length,
      wire: 1,
      // No PLATFORM_PUBLIC_URL: the request's own origin (inject's Host is localhost:80).
      public_base_url: "http://localhost:80",
    });
  });

  it("answers other API majors with 404 and an error body", async () => {
    const res = await h.call("GET", "/api/v2/admin/apps", undefined, null);
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe("api_version_not_supported");
  });

  it("gates every /api/v1/admin route, known or not", async () => {
    for (const url of ["/api/v1/admin/me", "/api/v1/admin/apps", "/api/v1/admin/nope"]) {
      const res = await h.call("GET", url, undefined, null);
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe("unauthorized");
    }
    const bad = await h.call("GET", "/api/v1/admin/me", undefined, "not-a-token");
    expect(bad.statusCode).toBe(401);
    const me = await h.call("GET", "/api/v1/admin/me");
    expect(me.statusCode).toBe(200);
    expect(me.json().admin).toMatchObject({ username: "root", instance_role: "admin", is_active: true });
    expect(me.json().admin.password_hash).toBeUndefined();
  });

  it("encrypts with the secret box and refuses a tampered value", () => {
    const box = h.built.ctx.secretBox;
    const sealed = box.seal("s3cret", "secret:app:name");
    expect(sealed).not.toContain("s3cret");
    expect(box.openString(sealed, "secret:app:name")).toBe("s3cret");
    expect(() => box.openString(sealed, "secret:app:other")).toThrow();
  });
});
