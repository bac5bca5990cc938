import { statSync } from "node:fs";
import { join } from "node:path";
import { createTestEnv } from "@app/kit/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EditableSettingsStore } from "../../src/settings/store.js";
import { type Gallery, startGallery } from "./harness.js";

const MIN = 60_000;

describe("identity: join, recover, sessions", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
  });
  afterAll(async () => {
    await g.close();
  });

  it("joins with a normalised name, a 4-digit PIN string and an Argon2id hash", async () => {
    const res = await g.call("POST", "/join", { body: { name: "  Anna \t  Maria " } });
    // A tab is a control character: refused before whitespace is collapsed.
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe("invalid_name");

    const ok = await g.call("POST", "/join", { body: { name: "  Anna    Maria " } });
    expect(ok.statusCode).toBe(201);
    const body = ok.json();
    expect(body.pin).toMatch(/^\d{4}$/);
    expect(typeof body.token).toBe("string");
    expect(body.user).toEqual({
      id: expect.any(String),
      display_name: "Anna Maria",
      role: "guest",
      is_banned: false,
    });
    const row = await g.built.ctx.database.db
      .selectFrom("users")
      .selectAll()
      .where("id", "=", body.user.id)
      .executeTakeFirstOrThrow();
    expect(row.recovery_pin_hash).toMatch(/^\$argon2id\$/);
    expect(row.recovery_pin_hash).not.toContain(body.pin);
  });

  it("validates names with one shared rule", async () => {
    const cases: [unknown, string][] = [
      ["", "invalid_name"],
      ["   ", "invalid_name"],
      ["x".repeat(41), "invalid_name"],
      ["bell\u0007", "invalid_name"],
      [42, "invalid_name"],
      ["ADMIN", "reserved_name"],
      [" administrator ", "reserved_name"],
      ["Host", "reserved_name"],
      ["SyStEm", "reserved_name"],
      ["moderator", "reserved_name"],
    ];
    for (const [name, code] of cases) {
      const res = await g.call("POST", "/join", { body: { name } });
      expect(res.statusCode, String(name)).toBe(422);
      expect(res.json().error.code).toBe(code);
    }
    expect((await g.call("POST", "/join", { body: { name: "y".repeat(40) } })).statusCode).toBe(201);
    const unknown = await g.call("POST", "/join", { body: { name: "Zed", extra: 1 } });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error).toMatchObject({ code: "validation_failed", field: "extra" });
  });

  it("refuses a taken name case-insensitively with Unicode case folding", async () => {
    await g.join("Straße");
    for (const name of ["STRASSE", "strasse", "straße"]) {
      const res = await g.call("POST", "/join", { body: { name } });
      expect(res.statusCode, name).toBe(409);
      expect(res.json().error.code).toBe("name_taken");
    }
  });

  it("resumes a retried join by client_join_id with a fresh PIN", async () => {
    const first = await g.call("POST", "/join", { body: { name: "Retry", client_join_id: "cj-1" } });
    expect(first.statusCode).toBe(201);
    const again = await g.call("POST", "/join", { body: { name: "Retry", client_join_id: "cj-1" } });
    expect(again.statusCode).toBe(200);
    expect(again.json().user.id).toBe(first.json().user.id);
    const newPin = again.json().pin;
    expect(newPin).toMatch(/^\d{4}$/);
    // Only the newest PIN works (the old one would if it happened to be identical).
    if (first.json().pin !== newPin) {
      const old = await g.call("POST", "/recover", { body: { name: "Retry", pin: first.json().pin } });
      expect(old.statusCode).toBe(401);
    }
    const rec = await g.call("POST", "/recover", { body: { name: "retry", pin: newPin } });
    expect(rec.statusCode).toBe(200);
    expect(rec.json().user.id).toBe(first.json().user.id);
  });

  it("counts every join attempt per (IP, name): 5 per 60 s", async () => {
    await g.join("Bucket");
    const ip = "192.0.2.10";
    for (let i = 0; i < 5; i++) {
      const res = await g.call("POST", "/join", { body: { name: "bucket" }, ip });
      expect(res.statusCode).toBe(409);
    }
    const limited = await g.call("POST", "/join", { body: { name: "BUCKET" }, ip });
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe("rate_limited");
    expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    // Refused names count too.
    const reservedIp = "192.0.2.11";
    for (let i = 0; i < 5; i++)
      expect((await g.call("POST", "/join", { body: { name: "Admin" }, ip: reservedIp })).statusCode).toBe(
        422,
      );
    expect((await g.call("POST", "/join", { body: { name: " admin " }, ip: reservedIp })).statusCode).toBe(
      429,
    );
    // Another name from the same IP is a different bucket.
    expect((await g.call("POST", "/join", { body: { name: "Other One" }, ip })).statusCode).toBe(201);
    await g.clock.advance(MIN);
    expect((await g.call("POST", "/join", { body: { name: "bucket" }, ip })).statusCode).toBe(409);
  });

  it("applies the join per-IP ceiling from config, using the right-most X-Forwarded-For hop (TRUST_PROXY=1)", async () => {
    await (g.built.ctx.settings as EditableSettingsStore).update({ join_ip_rate_per_min: 3 });
    try {
      const hop = (first: string) => ({ "x-forwarded-for": `${first}, 198.51.100.7` });
      for (let i = 0; i < 3; i++) {
        const res = await g.built.app.inject({
          method: "POST",
          url: "/api/v1/join",
          headers: hop(`203.0.113.${i}`),
          payload: { name: `Ceiling ${i}` },
        });
        expect(res.statusCode).toBe(201);
      }
      const res = await g.built.app.inject({
        method: "POST",
        url: "/api/v1/join",
        headers: hop("203.0.113.99"),
        payload: { name: "Ceiling 4" },
      });
      expect(res.statusCode).toBe(429);
      expect(res.headers["retry-after"]).toBeDefined();
    } finally {
      await (g.built.ctx.settings as EditableSettingsStore).update({ join_ip_rate_per_min: 300 });
      await g.clock.advance(MIN);
    }
  });

  it("recovers with the right PIN and refuses a wrong one or an unknown name alike", async () => {
    const u = await g.join("Recoverer");
    const ok = await g.call("POST", "/recover", { body: { name: " recoverer ", pin: u.pin } });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().user).toEqual({ id: u.id, display_name: "Recoverer", role: "guest", is_banned: false });
    const me = await g.call("GET", "/me/context", { token: ok.json().token });
    expect(me.statusCode).toBe(200);
    const wrongPin = u.pin === "0000" ? "0001" : "0000";
    const bad = await g.call("POST", "/recover", { body: { name: "Recoverer", pin: wrongPin } });
    expect(bad.statusCode).toBe(401);
    expect(bad.json().error.code).toBe("invalid_credentials");
    const unknown = await g.call("POST", "/recover", { body: { name: "Nobody Here", pin: "1234" } });
    expect(unknown.statusCode).toBe(401);
    expect(unknown.json().error).toEqual(bad.json().error);
    expect(bad.body).not.toContain(u.pin);
  });

  it("spends the (IP, name) budget after 4 failures, yet still verifies a correct PIN", async () => {
    const u = await g.join("Budget");
    const wrong = u.pin === "9999" ? "9998" : "9999";
    const ip = "192.0.2.20";
    for (let i = 0; i < 4; i++) {
      const res = await g.call("POST", "/recover", { body: { name: "Budget", pin: wrong }, ip });
      expect(res.statusCode).toBe(401);
    }
    const spent = await g.call("POST", "/recover", { body: { name: "Budget", pin: wrong }, ip });
    expect(spent.statusCode).toBe(429);
    expect(spent.json().error.code).toBe("too_many_attempts");
    expect(spent.headers["retry-after"]).toBeDefined();
    const right = await g.call("POST", "/recover", { body: { name: "Budget", pin: u.pin }, ip });
    expect(right.statusCode).toBe(200);
    // Failures past the budget do not count on the account: one IP cannot lock a victim.
    for (let i = 0; i < 20; i++)
      await g.call("POST", "/recover", { body: { name: "Budget", pin: wrong }, ip });
    const row = await g.built.ctx.database.db
      .selectFrom("users")
      .select(["failed_pin_attempts", "pin_locked_until"])
      .where("id", "=", u.id)
      .executeTakeFirstOrThrow();
    expect(row.pin_locked_until).toBeNull();
    expect(row.failed_pin_attempts).toBe(0);
  });

  it("checks the recover per-IP ceiling before the per-name budget, even for a correct PIN", async () => {
    const u = await g.join("Ceilinged");
    const settings = g.built.ctx.settings as EditableSettingsStore;
    await settings.update({ recover_ip_rate_per_min: 2 });
    try {
      const ip = "192.0.2.30";
      const wrong = u.pin === "1111" ? "2222" : "1111";
      expect(
        (await g.call("POST", "/recover", { body: { name: "Ceilinged", pin: wrong }, ip })).statusCode,
      ).toBe(401);
      expect(
        (await g.call("POST", "/recover", { body: { name: "Ceilinged", pin: wrong }, ip })).statusCode,
      ).toBe(401);
      const res = await g.call("POST", "/recover", { body: { name: "Ceilinged", pin: u.pin }, ip });
      expect(res.statusCode).toBe(429);
      expect(res.json().error.code).toBe("rate_limited");
    } finally {
      await settings.update({ recover_ip_rate_per_min: 30 });
    }
  });

  it("locks the account after 12 failures for 15 minutes, then lets the right PIN in", async () => {
    const u = await g.join("Lockee");
    const wrong = u.pin === "4321" ? "1234" : "4321";
    let last = await g.call("POST", "/recover", { body: { name: "Lockee", pin: wrong }, ip: "192.0.3.0" });
    for (let i = 1; i < 12; i++)
      last = await g.call("POST", "/recover", {
        body: { name: "Lockee", pin: wrong },
        ip: `192.0.3.${Math.floor(i / 4)}`,
      });
    expect(last.statusCode).toBe(429);
    const lockedUntil = new Date(g.clock.now() + 15 * MIN).toISOString();
    expect(last.json().error).toMatchObject({ code: "pin_locked", locked_until: lockedUntil });
    expect(Number(last.headers["retry-after"])).toBe(900);
    const right = await g.call("POST", "/recover", {
      body: { name: "Lockee", pin: u.pin },
      ip: "192.0.3.50",
    });
    expect(right.statusCode).toBe(429);
    expect(right.json().error.code).toBe("pin_locked");
    await g.clock.advance(15 * MIN);
    const after = await g.call("POST", "/recover", {
      body: { name: "Lockee", pin: u.pin },
      ip: "192.0.3.51",
    });
    expect(after.statusCode).toBe(200);
  });

  it("lets the failure streak decay after 15 minutes", async () => {
    const u = await g.join("Decayer");
    const wrong = u.pin === "5555" ? "6666" : "5555";
    for (let i = 0; i < 11; i++) {
      const res = await g.call("POST", "/recover", {
        body: { name: "Decayer", pin: wrong },
        ip: `192.0.4.${Math.floor(i / 4)}`,
      });
      expect(res.statusCode).toBe(401);
    }
    await g.clock.advance(15 * MIN);
    const res = await g.call("POST", "/recover", { body: { name: "Decayer", pin: wrong }, ip: "192.0.4.9" });
    expect(res.statusCode).toBe(401);
    const row = await g.built.ctx.database.db
      .selectFrom("users")
      .select(["failed_pin_attempts", "pin_locked_until"])
      .where("id", "=", u.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ failed_pin_attempts: 1, pin_locked_until: null });
  });

  it("answers /recover/request with 204 always and flags the account for the hosts", async () => {
    const u = await g.join("Forgetful");
    for (const name of ["", "Nobody At All", "ADMIN", "x".repeat(99), "forgetful"]) {
      const res = await g.call("POST", "/recover/request", { body: { name } });
      expect(res.statusCode, name).toBe(204);
    }
    const me = await g.call("GET", "/me/context", { token: u.token });
    expect(me.json().pin_reset_pending).toBe(true);
    const settings = g.built.ctx.settings as EditableSettingsStore;
    await settings.update({ recover_ip_rate_per_min: 1 });
    try {
      const ip = "192.0.5.1";
      expect((await g.call("POST", "/recover/request", { body: { name: "x" }, ip })).statusCode).toBe(204);
      const limited = await g.call("POST", "/recover/request", { body: { name: "x" }, ip });
      expect(limited.statusCode).toBe(429);
      expect(limited.headers["retry-after"]).toBeDefined();
    } finally {
      await settings.update({ recover_ip_rate_per_min: 30 });
    }
  });

  it("answers /me/context with user, event and pin_reset_pending", async () => {
    const u = await g.join("Context");
    const res = await g.call("GET", "/me/context", { token: u.token });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      user: { id: u.id, display_name: "Context", role: "guest", is_banned: false },
      event: {
        name: "Our Event",
        uploads_locked: false,
        released: false,
        keepsake_ready: false,
        upload_only: false,
        guestbook_enabled: true,
        guestbook_voice: false,
      },
      pin_reset_pending: false,
    });
    expect((await g.call("GET", "/me/context")).statusCode).toBe(401);
    expect((await g.call("GET", "/me/context", { token: "not-a-token" })).statusCode).toBe(401);
    expect((await g.call("GET", "/me/context", { token: `${u.token}x` })).statusCode).toBe(401);
  });

  it("logs out with DELETE /session and expires idle sessions while activity slides them", async () => {
    const a = await g.join("Sleeper");
    const out = await g.call("DELETE", "/session", { token: a.token });
    expect(out.statusCode).toBe(204);
    expect((await g.call("GET", "/me/context", { token: a.token })).statusCode).toBe(401);
    expect((await g.call("DELETE", "/session", { token: a.token })).statusCode).toBe(401);

    const b = await g.join("Active");
    const c = await g.join("Idle");
    const row = await g.built.ctx.database.db
      .selectFrom("sessions")
      .select("token_hash")
      .where("user_id", "=", b.id)
      .executeTakeFirstOrThrow();
    expect(row.token_hash).toMatch(/^[0-9a-f]{64}$/);
    for (let i = 0; i < 3; i++) {
      await g.clock.advance(20 * 24 * 3600_000);
      expect((await g.call("GET", "/me/context", { token: b.token })).statusCode).toBe(200);
    }
    expect((await g.call("GET", "/me/context", { token: c.token })).statusCode).toBe(401);
  });

  it("keeps a generated JWT key under DATA_DIR with mode 0600", () => {
    const mode = statSync(join(g.dataDir, "jwt-secret")).mode & 0o777;
    expect(mode).toBe(0o600);
  });
});

describe("admin account", () => {
  it("generates a password on first start, prints it once, and logs the admin in by role", async () => {
    const env = await createTestEnv("gallery_admin");
    try {
      const first = await startGallery({ keepEnv: env, env: { GALLERY_ADMIN_PASSWORD: "" } });
      expect(first.logs.lines.find((l) => l.includes("admin password generated"))).toBeDefined();
      // The password is in the start-up banner, never in a log line.
      const row = first.built.banner("http://gallery.test").find(([k]) => k === "Admin password");
      const password = row?.[1].split(" ")[0] ?? "";
      expect(password.length).toBeGreaterThan(16);
      expect(first.logs.text()).not.toContain(password);
      expect(first.built.banner("http://gallery.test")).toContainEqual([
        "Admin login",
        'http://gallery.test/admin as "Admin"',
      ]);
      const login = await first.call("POST", "/admin/login", { body: { password } });
      expect(login.statusCode).toBe(200);
      expect(login.json().user).toMatchObject({ display_name: "Admin", role: "admin", is_banned: false });
      const bad = await first.call("POST", "/admin/login", { body: { password: "wrong password" } });
      expect(bad.statusCode).toBe(401);
      expect(bad.json().error.code).toBe("invalid_credentials");
      const guest = await first.join("Alice");
      await first.close();

      // Second start: the admin name is now "Alice", which a guest already holds.
      const second = await startGallery({
        keepEnv: env,
        env: { GALLERY_ADMIN_PASSWORD: "", GALLERY_ADMIN_NAME: "Alice" },
      });
      try {
        expect(second.logs.text()).not.toContain("admin password generated");
        expect(second.built.banner("http://g").map(([k]) => k)).toEqual(["Guests join", "Admin login"]);
        const again = await second.call("POST", "/admin/login", { body: { password } });
        expect(again.statusCode).toBe(200);
        expect(again.json().user).toMatchObject({ display_name: "Alice", role: "admin" });
        const rec = await second.call("POST", "/recover", {
          body: { name: "Alice (guest)", pin: guest.pin },
        });
        expect(rec.statusCode).toBe(200);
        expect(rec.json().user).toEqual({
          id: guest.id,
          display_name: "Alice (guest)",
          role: "guest",
          is_banned: false,
        });
        const reserved = await second.call("POST", "/join", { body: { name: "alice" } });
        expect(reserved.json().error.code).toBe("reserved_name");
      } finally {
        await second.close();
      }
    } finally {
      await env.cleanup();
    }
  });
});
