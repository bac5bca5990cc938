import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_APP_ID } from "../../src/db/migrations/0001_control_plane.js";
import { type Harness, startHarness } from "./harness.js";

describe("apps, slugs and domains", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  it("lists the default app and creates apps with validated slugs", async () => {
    const list = (await h.call("GET", "/api/v1/admin/apps")).json();
    expect(list.items.map((a: { slug: string }) => a.slug)).toContain("default");
    expect(list.next_cursor).toBeNull();
    const created = await h.call("POST", "/api/v1/admin/apps", { slug: "shop", description: "A shop" });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ slug: "shop", name: "shop", description: "A shop" });
    for (const slug of ["a", "Shop", "with_underscore", "x".repeat(64), "sp ace"]) {
      const res = await h.call("POST", "/api/v1/admin/apps", { slug });
      expect(res.statusCode, slug).toBe(422);
    }
    const dup = await h.call("POST", "/api/v1/admin/apps", { slug: "shop" });
    expect(dup.statusCode).toBe(409);
    expect((await h.call("POST", "/api/v1/admin/apps", { slug: "ok", extra: 1 })).statusCode).toBe(422);
  });

  it("reads an app by id or slug; unknown is 404", async () => {
    const bySlug = (await h.call("GET", "/api/v1/admin/apps/shop")).json();
    const byId = (await h.call("GET", `/api/v1/admin/apps/${bySlug.id}`)).json();
    expect(byId.slug).toBe("shop");
    const missing = await h.call("GET", "/api/v1/admin/apps/nope-nope");
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe("app_not_found");
  });

  it("renames with permanent history: old slugs redirect GETs (308) and resolve other methods", async () => {
    const renamed = await h.call("PATCH", "/api/v1/admin/apps/shop", { slug: "store", name: "Store" });
    expect(renamed.statusCode).toBe(200);
    expect(renamed.json()).toMatchObject({ slug: "store", name: "Store" });
    const old = await h.call("GET", "/api/v1/admin/apps/shop/domains?x=1");
    expect(old.statusCode).toBe(308);
    expect(old.headers.location).toBe("/api/v1/admin/apps/store/domains?x=1");
    const again = await h.call("PATCH", "/api/v1/admin/apps/store", { slug: "store-2" });
    expect(again.statusCode).toBe(200);
    // Both retired slugs still lead to the app.
    expect((await h.call("GET", "/api/v1/admin/apps/shop")).headers.location).toBe(
      "/api/v1/admin/apps/store-2",
    );
    const app = (await h.call("GET", "/api/v1/admin/apps/store-2")).json();
    expect(app.slug_history).toEqual(["shop", "store"]);
    const post = await h.call("POST", "/api/v1/admin/apps/shop/domains", { host: "store.test" });
    expect(post.statusCode).toBe(201);
    expect(post.json().app_id).toBe(app.id);
  });

  it("checks slugs and takes over another app's history slug only with force", async () => {
    const other = (await h.call("POST", "/api/v1/admin/apps", { slug: "other" })).json();
    const check = async (slug: string) =>
      (await h.call("POST", `/api/v1/admin/apps/${other.id}/slug:check`, { slug })).json();
    expect(await check("fresh-slug")).toMatchObject({ available: true, reason: "free" });
    expect(await check("store-2")).toMatchObject({ available: false, reason: "taken" });
    expect(await check("shop")).toMatchObject({
      available: false,
      reason: "in_history",
      force_allowed: true,
    });
    expect(await check("BAD")).toMatchObject({ available: false, reason: "invalid" });
    expect(await check("other")).toMatchObject({ available: true, reason: "current" });

    const noForce = await h.call("PATCH", `/api/v1/admin/apps/${other.id}`, { slug: "shop" });
    expect(noForce.statusCode).toBe(409);
    expect(noForce.json().error.code).toBe("slug_in_history");
    const taken = await h.call("PATCH", `/api/v1/admin/apps/${other.id}`, { slug: "store-2", force: true });
    expect(taken.statusCode).toBe(409);
    expect(taken.json().error.code).toBe("slug_taken");
    const forced = await h.call("PATCH", `/api/v1/admin/apps/${other.id}`, { slug: "shop", force: true });
    expect(forced.statusCode).toBe(200);
    // "shop" now names the other app and no longer redirects to the store.
    const shop = await h.call("GET", "/api/v1/admin/apps/shop");
    expect(shop.statusCode).toBe(200);
    expect(shop.json().id).toBe(other.id);
    const store = (await h.call("GET", "/api/v1/admin/apps/store-2")).json();
    expect(store.slug_history).toEqual(["store"]);
    // An app may return to its own retired slug without force.
    const back = await h.call("PATCH", "/api/v1/admin/apps/store-2", { slug: "store" });
    expect(back.statusCode).toBe(200);
  });

  it("claims domains, refuses duplicates with 409 domain_taken, resolves hosts by specificity", async () => {
    const a = (await h.call("POST", "/api/v1/admin/apps", { slug: "alpha" })).json();
    const b = (await h.call("POST", "/api/v1/admin/apps", { slug: "beta" })).json();
    const claim = (app: string, host: string) =>
      h.call("POST", `/api/v1/admin/apps/${app}/domains`, { host });
    expect((await claim(a.id, "*.example.com")).json()).toMatchObject({
      host: "*.example.com",
      kind: "wildcard",
    });
    expect((await claim(b.id, "*.eu.example.com")).statusCode).toBe(201);
    expect((await claim(b.id, "API.Example.com")).json()).toMatchObject({
      host: "api.example.com",
      kind: "exact",
    });
    const dup = await claim(b.id, "*.example.com");
    expect(dup.statusCode).toBe(409);
    expect(dup.json().error.code).toBe("domain_taken");
    expect((await claim(a.id, "localhost")).json().error.code).toBe("domain_taken");
    for (const bad of ["*.com", "http://x.com", "a.*.com", "x.com/path", "x..com"]) {
      expect((await claim(a.id, bad)).statusCode, bad).toBe(422);
    }
    const rt = h.built.ctx.routeTable;
    expect(rt.resolveHost("www.example.com")).toBe(a.id);
    expect(rt.resolveHost("a.b.c.example.com")).toBe(a.id);
    expect(rt.resolveHost("api.example.com")).toBe(b.id);
    expect(rt.resolveHost("x.eu.example.com")).toBe(b.id);
    expect(rt.resolveHost("deep.x.eu.example.com:8080")).toBe(b.id);
    expect(rt.resolveHost("example.com")).toBeNull();
    expect(rt.resolveHost("localhost:3002")).toBe(DEFAULT_APP_ID);

    const listed = (await h.call("GET", `/api/v1/admin/apps/${b.id}/domains`)).json().items;
    expect(listed.map((d: { host: string }) => d.host)).toEqual(["*.eu.example.com", "api.example.com"]);
    expect((await h.call("DELETE", `/api/v1/admin/apps/${b.id}/domains/api.example.com`)).statusCode).toBe(
      204,
    );
    expect(rt.resolveHost("api.example.com")).toBe(a.id);
    expect((await h.call("DELETE", `/api/v1/admin/apps/${b.id}/domains/api.example.com`)).statusCode).toBe(
      404,
    );
  });

  it("deletes an app with its scripts, routes and claims", async () => {
    const app = (await h.call("POST", "/api/v1/admin/apps", { slug: "doomed" })).json();
    await h.call("POST", `/api/v1/admin/apps/${app.id}/domains`, { host: "doomed.test" });
    const script = (
      await h.call("POST", "/api/v1/admin/scripts", {
        app_id: app.id,
        name: "s",
        source: "export default () => 1",
      })
    ).json();
    await h.call("POST", `/api/v1/admin/scripts/${script.id}/routes`, { path: "/x", method: "GET" });
    expect(h.built.ctx.routeTable.match("doomed.test", "GET", "/x")?.script_id).toBe(script.id);
    const db = h.built.ctx.database.db;
    const now = h.clock.iso();
    await db
      .insertInto("kv_entries")
      .values({ app_id: app.id, collection: "c", key: "k", value: "1", updated_at: now })
      .execute();
    await db
      .insertInto("kv_entries")
      .values({ app_id: "keep", collection: "c", key: "k", value: "1", updated_at: now })
      .execute();
    const blobDir = join(h.built.ctx.paths.filesRoot, app.id);
    mkdirSync(blobDir, { recursive: true });
    writeFileSync(join(blobDir, "x.bin"), "bytes");
    expect((await h.call("DELETE", `/api/v1/admin/apps/${app.id}`)).statusCode).toBe(204);
    const left = await db.selectFrom("kv_entries").select("app_id").execute();
    expect(left).toEqual([{ app_id: "keep" }]);
    expect(existsSync(blobDir)).toBe(false);
    expect((await h.call("GET", `/api/v1/admin/apps/${app.id}`)).statusCode).toBe(404);
    expect((await h.call("GET", `/api/v1/admin/scripts/${script.id}`)).statusCode).toBe(404);
    expect(h.built.ctx.routeTable.match("doomed.test", "GET", "/x")).toBeNull();
  });
});
