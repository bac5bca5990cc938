import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { epoch, type Gallery, recordEvents, release, seedUpload, startGallery } from "./harness.js";

describe("moderation", () => {
  let g: Gallery;
  let admin: string;
  let host: { token: string; id: string };
  beforeAll(async () => {
    g = await startGallery();
    admin = await g.adminToken();
    host = await g.host("Hostess");
  });
  afterAll(async () => {
    await g.close();
  });

  const db = () => g.built.ctx.database.db;
  const userRow = (id: string) =>
    db().selectFrom("users").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

  it("admits hosts and the admin to host routes and refuses guests with 403 forbidden", async () => {
    const guest = await g.join("Plain Guest");
    const res = await g.call("GET", "/host/users", { token: guest.token });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe("forbidden");
    expect((await g.call("GET", "/host/users")).statusCode).toBe(401);
    const list = await g.call("GET", "/host/users", { token: host.token });
    expect(list.statusCode).toBe(200);
    expect(list.json().users).toContainEqual({
      id: guest.id,
      display_name: "Plain Guest",
      role: "guest",
      is_banned: false,
      upload_count: 0,
      pin_reset_requested_at: null,
      pin_locked_until: null,
    });
    expect((await g.call("GET", "/host/users", { token: admin })).statusCode).toBe(200);
    // A host calling an admin route.
    const cfg = await g.call("GET", "/admin/config", { token: host.token });
    expect(cfg.statusCode).toBe(403);
    expect(cfg.json().error.code).toBe("forbidden");
  });

  it("lets only the admin promote and demote; a demoted host loses powers at once", async () => {
    const u = await g.join("Climber");
    const byHost = await g.call("POST", `/host/users/${u.id}/promote`, { token: host.token });
    expect(byHost.statusCode).toBe(403);
    expect(byHost.json().error.code).toBe("forbidden");
    const promoted = await g.call("POST", `/host/users/${u.id}/promote`, { token: admin });
    expect(promoted.statusCode).toBe(200);
    expect(promoted.json()).toEqual({
      user: { id: u.id, display_name: "Climber", role: "host", is_banned: false },
    });
    // The same token now has host powers: the role comes from the live row.
    expect((await g.call("GET", "/host/users", { token: u.token })).statusCode).toBe(200);
    const demoted = await g.call("POST", `/host/users/${u.id}/demote`, { token: admin });
    expect(demoted.json().user.role).toBe("guest");
    expect((await g.call("GET", "/host/users", { token: u.token })).statusCode).toBe(403);

    const adminId = (await g.call("GET", "/me/context", { token: admin })).json().user.id;
    const demoteAdmin = await g.call("POST", `/host/users/${adminId}/demote`, { token: host.token });
    expect(demoteAdmin.statusCode).toBe(403);
    const banAdmin = await g.call("POST", `/host/users/${adminId}/ban`, { token: host.token });
    expect(banAdmin.statusCode).toBe(403);
    expect(banAdmin.json().error.code).toBe("forbidden");
    expect((await userRow(adminId)).is_banned).toBe(0);
    expect((await g.call("POST", `/host/users/${newId()}/ban`, { token: host.token })).statusCode).toBe(404);
  });

  it("bans read-only with content hidden everywhere, and unbans", async () => {
    const bad = await g.join("Rowdy");
    const fan = await g.join("Watcher");
    const up = await seedUpload(g, bad.id);
    const ev = recordEvents(g);
    const res = await g.call("POST", `/host/users/${bad.id}/ban`, { token: host.token });
    expect(res.statusCode).toBe(200);
    expect(res.json().user).toEqual({ id: bad.id, display_name: "Rowdy", role: "guest", is_banned: true });
    const row = await userRow(bad.id);
    expect(row.uploads_hidden_at).toBe(g.clock.iso());
    expect(ev.seen).toContainEqual({ event: "user-hidden", data: { user_id: bad.id }, hostsOnly: false });
    // Read access stays; writes are refused; the upload is hidden from everyone.
    const me = await g.call("GET", "/me/context", { token: bad.token });
    expect(me.statusCode).toBe(200);
    expect(me.json().user.is_banned).toBe(true);
    expect(
      (await g.call("POST", `/upload/${up}/comments`, { token: bad.token, body: { text: "x" } })).statusCode,
    ).toBe(403);
    expect((await g.call("GET", `/upload/${up}/comments`, { token: fan.token })).statusCode).toBe(404);
    expect((await g.call("PUT", `/upload/${up}/like`, { token: fan.token })).statusCode).toBe(404);

    const unban = await g.call("POST", `/host/users/${bad.id}/unban`, { token: host.token });
    expect(unban.json().user.is_banned).toBe(false);
    expect((await userRow(bad.id)).uploads_hidden_at).toBeNull();
    expect((await g.call("PUT", `/upload/${up}/like`, { token: fan.token })).statusCode).toBe(200);
    ev.stop();
    expect(ev.names()).toContain("user-unhidden");
  });

  it("resets a PIN: new 4-digit PIN, lock and request cleared, hosts-only event", async () => {
    const u = await g.join("Locked Out");
    await db()
      .updateTable("users")
      .set({
        failed_pin_attempts: 7,
        pin_locked_until: new Date(g.clock.now() + 600_000).toISOString(),
        pin_reset_requested_at: g.clock.iso(),
      })
      .where("id", "=", u.id)
      .execute();
    const ev = recordEvents(g);
    const res = await g.call("POST", `/host/users/${u.id}/reset-pin`, { token: host.token });
    expect(res.statusCode).toBe(200);
    const { pin } = res.json();
    expect(pin).toMatch(/^\d{4}$/);
    const row = await userRow(u.id);
    expect(row).toMatchObject({
      failed_pin_attempts: 0,
      pin_locked_until: null,
      pin_reset_requested_at: null,
    });
    expect((await g.call("POST", "/recover", { body: { name: "locked out", pin } })).statusCode).toBe(200);
    ev.stop();
    expect(ev.seen).toContainEqual({ event: "pin-reset", data: { user_id: u.id }, hostsOnly: true });
    const adminId = (await g.call("GET", "/me/context", { token: admin })).json().user.id;
    expect((await g.call("POST", `/host/users/${adminId}/reset-pin`, { token: host.token })).statusCode).toBe(
      403,
    );
    const guest = await g.join("Nosy");
    expect((await g.call("POST", `/host/users/${u.id}/reset-pin`, { token: guest.token })).statusCode).toBe(
      403,
    );
  });

  it("takes an upload down: soft delete by host, refund never below 0, epoch bump after release", async () => {
    const u = await g.join("Uploader");
    const big = await seedUpload(g, u.id, { size: 500 });
    const small = await seedUpload(g, u.id, { size: 150 });
    await db().updateTable("users").set({ total_upload_bytes: 600 }).where("id", "=", u.id).execute();

    const ev = recordEvents(g);
    expect((await g.call("DELETE", `/host/upload/${small}`, { token: host.token })).statusCode).toBe(204);
    expect((await userRow(u.id)).total_upload_bytes).toBe(450);
    const before = await epoch(g);
    expect(before).toBe(0);
    await release(g);
    expect((await g.call("DELETE", `/host/upload/${big}`, { token: admin })).statusCode).toBe(204);
    expect((await userRow(u.id)).total_upload_bytes).toBe(0);
    expect(await epoch(g)).toBe(1);
    expect((await g.call("DELETE", `/host/upload/${big}`, { token: host.token })).statusCode).toBe(404);
    const rows = await db()
      .selectFrom("uploads")
      .select(["id", "deleted_by", "deleted_at"])
      .where("user_id", "=", u.id)
      .execute();
    expect(rows.every((r) => r.deleted_by === "host" && r.deleted_at !== null)).toBe(true);
    ev.stop();
    expect(ev.seen.filter((e) => e.event === "upload-removed").map((e) => e.data)).toEqual([
      { upload_id: small },
      { upload_id: big },
    ]);
    const guest = await g.join("Vandal");
    const other = await seedUpload(g, u.id);
    expect((await g.call("DELETE", `/host/upload/${other}`, { token: guest.token })).statusCode).toBe(403);
  });

  it("removes a comment as host, bumping the epoch after release and auditing everything", async () => {
    const u = await g.join("Commenter");
    const up = await seedUpload(g, host.id);
    const c = (
      await g.call("POST", `/upload/${up}/comments`, { token: u.token, body: { text: "rude" } })
    ).json().comment;
    const before = await epoch(g);
    expect((await g.call("DELETE", `/host/comment/${c.id}`, { token: host.token })).statusCode).toBe(204);
    expect(await epoch(g)).toBe(before + 1);
    expect((await g.call("GET", `/upload/${up}/comments`, { token: u.token })).json().comments).toEqual([]);
    expect((await g.call("DELETE", `/host/comment/${c.id}`, { token: host.token })).statusCode).toBe(404);

    // Ban and unban after release change what the keepsake shows: each bumps the epoch.
    const e0 = await epoch(g);
    await g.call("POST", `/host/users/${u.id}/ban`, { token: host.token });
    expect(await epoch(g)).toBe(e0 + 1);
    await g.call("POST", `/host/users/${u.id}/ban`, { token: host.token });
    expect(await epoch(g)).toBe(e0 + 1);
    await g.call("POST", `/host/users/${u.id}/unban`, { token: host.token });
    expect(await epoch(g)).toBe(e0 + 2);

    const page1 = await g.call("GET", "/host/audit?limit=2", { token: host.token });
    expect(page1.statusCode).toBe(200);
    const p1 = page1.json();
    expect(p1.entries).toHaveLength(2);
    expect(p1.entries[0]).toEqual({
      id: expect.any(String),
      actor: { id: host.id, display_name: "Hostess" },
      action: "unban",
      target: { type: "user", id: u.id },
      created_at: g.clock.iso(),
    });
    const all: { action: string }[] = [...p1.entries];
    let cursor: string | null = p1.next_cursor;
    while (cursor) {
      const page = (
        await g.call("GET", `/host/audit?limit=2&cursor=${cursor}`, { token: host.token })
      ).json();
      all.push(...page.entries);
      cursor = page.next_cursor;
    }
    const actions = all.map((e) => e.action);
    for (const a of ["promote", "demote", "ban", "unban", "reset_pin", "remove_upload", "remove_comment"])
      expect(actions).toContain(a);
    expect(new Set(all.map((e) => (e as unknown as { id: string }).id)).size).toBe(all.length);
    const total = await db()
      .selectFrom("host_audit")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirstOrThrow();
    expect(all).toHaveLength(Number(total.n));
    expect((await g.call("GET", "/host/audit?cursor=garbage", { token: host.token })).statusCode).toBe(422);
  });
});
