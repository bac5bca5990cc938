import { loadEnv } from "@app/kit/config";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildApp } from "../../src/app.js";
import { envSpec } from "../../src/config.js";
import { ADMIN, type Harness, startHarness } from "./harness.js";

describe("admin authentication and accounts", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h.close());

  it("logs in with a 32-byte opaque token, an HttpOnly SameSite=Strict cookie, and stores only its hash", async () => {
    const res = await h.call("POST", "/api/v1/admin/login", ADMIN, null);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(Buffer.from(body.token, "base64url")).toHaveLength(32);
    expect(body.expires_at).toBe("2026-11-22T12:00:00.000Z");
    const cookie = String(res.headers["set-cookie"]);
    expect(cookie).toContain(`platform_session=${body.token}`);
    expect(cookie).toContain("HttpOnly");
    expect(cookie).toContain("SameSite=Strict");
    const rows = await h.built.ctx.database.db.selectFrom("admin_sessions").select("token_hash").execute();
    expect(rows.some((r) => r.token_hash === body.token)).toBe(false);
    expect(rows.every((r) => /^[0-9a-f]{64}$/.test(r.token_hash))).toBe(true);
    // The cookie alone is a credential.
    const me = await h.built.app.inject({
      method: "GET",
      url: "/api/v1/admin/me",
      headers: { cookie: `other=1; platform_session=${body.token}` },
    });
    expect(me.statusCode).toBe(200);
    expect(me.json().admin.username).toBe(ADMIN.username);
    expect(h.logs.text()).not.toContain(body.token);
    expect(h.logs.text()).not.toContain(ADMIN.password);
  });

  it("refuses a wrong password or unknown user with 401 invalid_credentials", async () => {
    for (const body of [
      { username: ADMIN.username, password: "wrong password" },
      { username: "nobody", password: "whatever1" },
    ]) {
      const res = await h.call("POST", "/api/v1/admin/login", body, null);
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe("invalid_credentials");
    }
    const extra = await h.call("POST", "/api/v1/admin/login", { ...ADMIN, extra: 1 }, null);
    expect(extra.statusCode).toBe(422);
  });

  it("throttles repeated failed logins per username with 429 and Retry-After", async () => {
    await h.call("POST", "/api/v1/admin/admins", {
      username: "tess",
      password: "tess-password",
      instance_role: "member",
    });
    for (let i = 0; i < 10; i++) {
      const res = await h.call(
        "POST",
        "/api/v1/admin/login",
        { username: "tess", password: `wrong-${i}` },
        null,
      );
      expect(res.statusCode).toBe(401);
    }
    const locked = await h.call(
      "POST",
      "/api/v1/admin/login",
      { username: "tess", password: "tess-password" },
      null,
    );
    expect(locked.statusCode).toBe(429);
    expect(locked.json().error.code).toBe("too_many_attempts");
    expect(Number(locked.headers["retry-after"])).toBeGreaterThan(0);
    // Other accounts are unaffected.
    expect((await h.call("POST", "/api/v1/admin/login", ADMIN, null)).statusCode).toBe(200);
    h.clock.set(h.clock.now() + 15 * 60_000 + 1000);
    const after = await h.call(
      "POST",
      "/api/v1/admin/login",
      { username: "tess", password: "tess-password" },
      null,
    );
    expect(after.statusCode).toBe(200);
  });

  it("slides the 24 h lifetime on use and expires an idle session", async () => {
    const token = (await h.call("POST", "/api/v1/admin/login", ADMIN, null)).json().token;
    h.clock.set(h.clock.now() + 23 * 3_600_000);
    expect((await h.call("GET", "/api/v1/admin/me", undefined, token)).statusCode).toBe(200);
    h.clock.set(h.clock.now() + 23 * 3_600_000); // 46 h after login, 23 h after last use
    expect((await h.call("GET", "/api/v1/admin/me", undefined, token)).statusCode).toBe(200);
    h.clock.set(h.clock.now() + 24 * 3_600_000 + 1000);
    const res = await h.call("GET", "/api/v1/admin/me", undefined, token);
    expect(res.statusCode).toBe(401);
    h.token = (await h.call("POST", "/api/v1/admin/login", ADMIN, null)).json().token;
  });

  it("logs out: 204, the token stops working, the cookie is cleared", async () => {
    const token = (await h.call("POST", "/api/v1/admin/login", ADMIN, null)).json().token;
    const res = await h.call("POST", "/api/v1/admin/logout", undefined, token);
    expect(res.statusCode).toBe(204);
    expect(String(res.headers["set-cookie"])).toContain("Max-Age=0");
    expect((await h.call("GET", "/api/v1/admin/me", undefined, token)).statusCode).toBe(401);
    expect((await h.call("POST", "/api/v1/admin/logout", undefined, null)).statusCode).toBe(401);
  });

  it("creates, lists, reads and patches admins; is_active false wipes sessions and blocks login", async () => {
    const created = await h.call("POST", "/api/v1/admin/admins", {
      username: "bob",
      password: "bob-password",
    });
    expect(created.statusCode).toBe(201);
    const bob = created.json();
    expect(bob).toMatchObject({ username: "bob", instance_role: "admin", is_active: true });
    expect(bob.password_hash).toBeUndefined();
    const dup = await h.call("POST", "/api/v1/admin/admins", { username: "bob", password: "another-pass" });
    expect(dup.statusCode).toBe(409);

    const list = await h.call("GET", "/api/v1/admin/admins");
    expect(list.json().items.map((a: { username: string }) => a.username)).toEqual(
      expect.arrayContaining([ADMIN.username, "bob"]),
    );
    const bobToken = (
      await h.call("POST", "/api/v1/admin/login", { username: "bob", password: "bob-password" }, null)
    ).json().token;
    expect((await h.call("GET", `/api/v1/admin/admins/${bob.id}`, undefined, bobToken)).statusCode).toBe(200);

    const off = await h.call("PATCH", `/api/v1/admin/admins/${bob.id}`, { is_active: false });
    expect(off.statusCode).toBe(200);
    expect(off.json().is_active).toBe(false);
    expect((await h.call("GET", "/api/v1/admin/me", undefined, bobToken)).statusCode).toBe(401);
    const sessions = await h.built.ctx.database.db
      .selectFrom("admin_sessions")
      .select("id")
      .where("admin_id", "=", bob.id)
      .execute();
    expect(sessions).toHaveLength(0);
    const login = await h.call(
      "POST",
      "/api/v1/admin/login",
      { username: "bob", password: "bob-password" },
      null,
    );
    expect(login.statusCode).toBe(401);

    const del = await h.call("DELETE", `/api/v1/admin/admins/${bob.id}`);
    expect(del.statusCode).toBe(204);
    expect((await h.call("GET", `/api/v1/admin/admins/${bob.id}`)).statusCode).toBe(404);
  });

  it("refuses to delete or deactivate the last active admin with 409 last_admin", async () => {
    const me = (await h.call("GET", "/api/v1/admin/me")).json().admin;
    const deactivate = await h.call("PATCH", `/api/v1/admin/admins/${me.id}`, { is_active: false });
    expect(deactivate.statusCode).toBe(409);
    expect(deactivate.json().error.code).toBe("last_admin");
    const demote = await h.call("PATCH", `/api/v1/admin/admins/${me.id}`, { instance_role: "member" });
    expect(demote.json().error.code).toBe("last_admin");
    const del = await h.call("DELETE", `/api/v1/admin/admins/${me.id}`);
    expect(del.statusCode).toBe(409);
    expect(del.json().error.code).toBe("last_admin");
    expect((await h.call("GET", "/api/v1/admin/me")).statusCode).toBe(200);
  });

  it("changing a password ends the account's other sessions but keeps the caller's", async () => {
    const me = (await h.call("GET", "/api/v1/admin/me")).json().admin;
    const other = (await h.call("POST", "/api/v1/admin/login", ADMIN, null)).json().token;
    const res = await h.call("PATCH", `/api/v1/admin/admins/${me.id}`, { password: "a new password" });
    expect(res.statusCode).toBe(200);
    expect((await h.call("GET", "/api/v1/admin/me", undefined, other)).statusCode).toBe(401);
    expect((await h.call("GET", "/api/v1/admin/me")).statusCode).toBe(200);
    expect(
      (
        await h.call(
          "POST",
          "/api/v1/admin/login",
          { username: ADMIN.username, password: "a new password" },
          null,
        )
      ).statusCode,
    ).toBe(200);
    await h.call("PATCH", `/api/v1/admin/admins/${me.id}`, { password: ADMIN.password });
  });

  it("issues API keys once, uses them as bearer credentials with their scopes, and deletes them", async () => {
    const created = await h.call("POST", "/api/v1/admin/api-keys", {
      name: "ci",
      scopes: ["script:read", "app:read"],
    });
    expect(created.statusCode).toBe(201);
    const key = created.json();
    expect(key.secret).toMatch(/^spk_/);
    expect(key.scopes).toEqual(["script:read", "app:read"]);
    const listed = (await h.call("GET", "/api/v1/admin/api-keys")).json().items;
    const shown = listed.find((k: { id: string }) => k.id === key.id);
    expect(shown).toBeDefined();
    expect(shown.secret).toBeUndefined();
    expect(JSON.stringify(listed)).not.toContain(key.secret);

    expect((await h.call("GET", "/api/v1/admin/scripts", undefined, key.secret)).statusCode).toBe(200);
    const viaHeader = await h.built.app.inject({
      method: "GET",
      url: "/api/v1/admin/apps",
      headers: { "x-api-key": key.secret },
    });
    expect(viaHeader.statusCode).toBe(200);
    // Not granted: writing scripts, managing admins.
    const write = await h.call(
      "POST",
      "/api/v1/admin/scripts",
      { app_id: "default", name: "k1", source: "export default () => 1" },
      key.secret,
    );
    expect(write.statusCode).toBe(403);
    expect((await h.call("GET", "/api/v1/admin/admins", undefined, key.secret)).statusCode).toBe(403);

    const bad = await h.call("POST", "/api/v1/admin/api-keys", { name: "x", scopes: ["root:all"] });
    expect(bad.statusCode).toBe(422);

    expect((await h.call("DELETE", `/api/v1/admin/api-keys/${key.id}`)).statusCode).toBe(204);
    expect((await h.call("GET", "/api/v1/admin/scripts", undefined, key.secret)).statusCode).toBe(401);
  });

  it("lists only what a key's scopes allow", async () => {
    const key = (
      await h.call("POST", "/api/v1/admin/api-keys", { name: "admins-only", scopes: ["admin:read"] })
    ).json();
    expect((await h.call("GET", "/api/v1/admin/apps", undefined, key.secret)).json().items).toEqual([]);
    expect((await h.call("GET", "/api/v1/admin/scripts", undefined, key.secret)).json().items).toEqual([]);
    expect((await h.call("GET", "/api/v1/admin/admins", undefined, key.secret)).statusCode).toBe(200);
    const reader = (
      await h.call("POST", "/api/v1/admin/api-keys", { name: "apps-only", scopes: ["app:read"] })
    ).json();
    expect(
      (await h.call("GET", "/api/v1/admin/apps", undefined, reader.secret)).json().items.length,
    ).toBeGreaterThan(0);
    expect((await h.call("GET", "/api/v1/admin/scripts", undefined, reader.secret)).json().items).toEqual([]);
  });

  it("limits an app-bound API key to its app", async () => {
    const app = (await h.call("POST", "/api/v1/admin/apps", { slug: "keyed" })).json();
    const key = (
      await h.call("POST", "/api/v1/admin/api-keys", {
        name: "app-key",
        scopes: ["script:read", "script:write", "app:read"],
        app_id: "keyed",
      })
    ).json();
    expect(key.app_id).toBe(app.id);
    const mine = { app_id: app.id, name: "k", source: "export default () => 1" };
    expect((await h.call("POST", "/api/v1/admin/scripts", mine, key.secret)).statusCode).toBe(201);
    const elsewhere = { app_id: "default", name: "k", source: "export default () => 1" };
    expect((await h.call("POST", "/api/v1/admin/scripts", elsewhere, key.secret)).statusCode).toBe(403);
    const listed = (await h.call("GET", "/api/v1/admin/apps", undefined, key.secret)).json().items;
    expect(listed.map((a: { slug: string }) => a.slug)).toEqual(["keyed"]);
    expect((await h.call("GET", "/api/v1/admin/admins", undefined, key.secret)).statusCode).toBe(403);
  });

  it("gives members exactly their app role's scopes", async () => {
    const member = (
      await h.call("POST", "/api/v1/admin/admins", {
        username: "mia",
        password: "mia-password",
        instance_role: "member",
      })
    ).json();
    const app = (await h.call("POST", "/api/v1/admin/apps", { slug: "mia-app" })).json();
    expect(
      (await h.call("PUT", `/api/v1/admin/apps/${app.id}/members/${member.id}`, { role: "viewer" }))
        .statusCode,
    ).toBe(200);
    const token = (
      await h.call("POST", "/api/v1/admin/login", { username: "mia", password: "mia-password" }, null)
    ).json().token;
    const apps = (await h.call("GET", "/api/v1/admin/apps", undefined, token)).json();
    expect(apps.items.map((a: { slug: string }) => a.slug)).toEqual(["mia-app"]);
    const src = { app_id: app.id, name: "m1", source: "export default () => 1" };
    expect((await h.call("POST", "/api/v1/admin/scripts", src, token)).statusCode).toBe(403);
    expect((await h.call("GET", "/api/v1/admin/apps/default", undefined, token)).statusCode).toBe(403);
    expect((await h.call("POST", "/api/v1/admin/apps", { slug: "mine" }, token)).statusCode).toBe(403);

    await h.call("PUT", `/api/v1/admin/apps/${app.id}/members/${member.id}`, { role: "editor" });
    expect((await h.call("POST", "/api/v1/admin/scripts", src, token)).statusCode).toBe(201);
    expect(
      (await h.call("POST", `/api/v1/admin/apps/${app.id}/domains`, { host: "mia.test" }, token)).statusCode,
    ).toBe(403);
    const me = (await h.call("GET", "/api/v1/admin/me", undefined, token)).json();
    expect(me.app_roles).toEqual({ [app.id]: "editor" });
    expect(me.instance_role).toBe("member");
  });
});

describe("admin bootstrap", () => {
  it("creates `admin` with a random password printed once when no variables are set, and is inert afterwards", async () => {
    const h = await startHarness(
      { PLATFORM_ADMIN_USERNAME: "", PLATFORM_ADMIN_PASSWORD: "" },
      { login: false },
    );
    try {
      const line = h.announced.find((l) => l.includes("password:"));
      expect(line).toBeDefined();
      const password = String(line).split("password: ")[1] as string;
      expect(password.length).toBeGreaterThanOrEqual(20);
      expect(h.logs.text()).not.toContain(password);
      const res = await h.call("POST", "/api/v1/admin/login", { username: "admin", password }, null);
      expect(res.statusCode).toBe(200);

      // A restart with bootstrap variables set changes nothing once an admin exists.
      const config = loadEnv(envSpec, {
        DATA_DIR: h.dataDir,
        DATABASE_URL: h.built.ctx.config.DATABASE_URL,
        PLATFORM_ADMIN_USERNAME: "late",
        PLATFORM_ADMIN_PASSWORD: "late-password",
      });
      const announced: string[] = [];
      const again = await buildApp(config, {
        logger: captureLogger().logger,
        announce: (l) => announced.push(l),
      });
      try {
        expect(announced).toEqual([]);
        const late = await again.app.inject({
          method: "POST",
          url: "/api/v1/admin/login",
          payload: { username: "late", password: "late-password" },
        });
        expect(late.statusCode).toBe(401);
        const admins = await again.ctx.database.db.selectFrom("admins").select("username").execute();
        expect(admins).toEqual([{ username: "admin" }]);
      } finally {
        await again.app.close();
        await again.close();
      }
    } finally {
      await h.close();
    }
  });
});
