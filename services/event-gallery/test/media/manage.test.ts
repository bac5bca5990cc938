import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, solidJpeg, startGallery, upload, uploadRow, userBytes } from "./helpers.js";

describe("PATCH and DELETE /upload/{id}", () => {
  let g: Gallery;
  let jpeg: Buffer;
  let owner: { token: string; id: string };
  let other: { token: string; id: string };
  const events: [string, Record<string, unknown>][] = [];

  beforeAll(async () => {
    g = await startGallery();
    jpeg = await solidJpeg();
    owner = await g.join("Owner");
    other = await g.join("Other");
    g.built.ctx.bus.subscribe((e, d) => events.push([e, d]));
  });
  afterAll(async () => g.close());

  const epoch = async () =>
    (
      await g.built.ctx.database.db
        .selectFrom("event")
        .select("export_epoch")
        .where("id", "=", 1)
        .executeTakeFirstOrThrow()
    ).export_epoch;
  const setReleased = (released: boolean) =>
    g.built.ctx.database.db
      .updateTable("event")
      .set({ export_released_at: released ? g.clock.iso() : null })
      .where("id", "=", 1)
      .execute();
  const create = async (fields: [string, string][] = []) =>
    (await upload(g, owner.token, jpeg, fields)).json().upload;
  const patch = (id: string, body: unknown, token = owner.token) =>
    g.call("PATCH", `/upload/${id}`, { token, body });

  it("edits caption and hashtags (string or array), normalised, and tells clients", async () => {
    const up = await create([
      ["caption", "old"],
      ["hashtags", "a"],
    ]);
    await g.clock.advance(1_000);
    events.length = 0;
    const res = await patch(up.id, { caption: " new ", hashtags: ["#Zed", "alpha beta", "zed"] });
    expect(res.statusCode).toBe(200);
    expect(res.json().upload).toMatchObject({
      id: up.id,
      caption: "new",
      hashtags: ["alpha", "beta", "zed"],
      updated_at: g.clock.iso(),
    });
    expect(events).toEqual([["upload-updated", { id: up.id, user_id: owner.id }]]);
    const res2 = await patch(up.id, { hashtags: "one,two" });
    expect(res2.json().upload).toMatchObject({ caption: "new", hashtags: ["one", "two"] });
  });

  it("bumps the export epoch after release only when something actually changes", async () => {
    const up = await create([
      ["caption", "same"],
      ["hashtags", "b a"],
    ]);
    const e0 = await epoch();
    expect((await patch(up.id, { caption: "changed" })).statusCode).toBe(200);
    expect(await epoch()).toBe(e0);
    await setReleased(true);
    try {
      events.length = 0;
      expect((await patch(up.id, { caption: "changed", hashtags: "a,b" })).statusCode).toBe(200);
      expect(await epoch()).toBe(e0);
      expect(events).toEqual([]);
      expect((await patch(up.id, { hashtags: ["a"] })).statusCode).toBe(200);
      expect(await epoch()).toBe(e0 + 1);
      expect((await patch(up.id, {})).statusCode).toBe(200);
      expect(await epoch()).toBe(e0 + 1);
    } finally {
      await setReleased(false);
    }
  });

  it("validates, checks the ban before ownership, and answers 404 for unknown or deleted uploads", async () => {
    const up = await create();
    const bad = [{ hashtags: "no-dash" }, { caption: "x".repeat(2001) }, { caption: 5 }, { title: "x" }];
    for (const body of bad) {
      const res = await patch(up.id, body);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expect(res.json().error.code).toBe("validation_failed");
    }
    const notMine = await patch(up.id, { caption: "hijack" }, other.token);
    expect(notMine.statusCode).toBe(403);
    expect(notMine.json().error.code).toBe("not_owner");
    const del = await g.call("DELETE", `/upload/${up.id}`, { token: other.token });
    expect(del.statusCode).toBe(403);
    expect(del.json().error.code).toBe("not_owner");
    const { db } = g.built.ctx.database;
    await db.updateTable("users").set({ is_banned: 1 }).where("id", "=", other.id).execute();
    try {
      const banned = await patch(up.id, { caption: "hijack" }, other.token);
      expect(banned.json().error.code).toBe("banned");
      expect((await g.call("DELETE", `/upload/${up.id}`, { token: other.token })).json().error.code).toBe(
        "banned",
      );
    } finally {
      await db.updateTable("users").set({ is_banned: 0 }).where("id", "=", other.id).execute();
    }
    expect((await patch("01a1fe8f-0000-7000-8000-000000000000", { caption: "x" })).statusCode).toBe(404);
    expect((await g.call("DELETE", `/upload/${up.id}`, { token: owner.token })).statusCode).toBe(204);
    expect((await patch(up.id, { caption: "x" })).statusCode).toBe(404);
    expect((await g.call("DELETE", `/upload/${up.id}`, { token: owner.token })).statusCode).toBe(404);
    expect((await uploadRow(g, up.id)).caption).toBe("");
  });

  it("rate-limits edits per user", async () => {
    const editor = await g.join("Editor");
    const up = (await upload(g, editor.token, jpeg)).json().upload;
    let last = 200;
    for (let i = 0; i < 31 && last === 200; i++)
      last = (await patch(up.id, { caption: `v${i}` }, editor.token)).statusCode;
    expect(last).toBe(429);
    await g.clock.advance(60_000);
    expect((await patch(up.id, { caption: "later" }, editor.token)).statusCode).toBe(200);
  });

  it("own delete: soft delete by owner, refund never below 0, epoch bump after release, upload-removed", async () => {
    const before = await userBytes(g, owner.id);
    const a = await create();
    expect(await userBytes(g, owner.id)).toBe(before + jpeg.length);
    events.length = 0;
    const e0 = await epoch();
    expect((await g.call("DELETE", `/upload/${a.id}`, { token: owner.token })).statusCode).toBe(204);
    expect(await uploadRow(g, a.id)).toMatchObject({ deleted_by: "owner", deleted_at: g.clock.iso() });
    expect(await userBytes(g, owner.id)).toBe(before);
    expect(await epoch()).toBe(e0);
    expect(events).toEqual([["upload-removed", { id: a.id, user_id: owner.id }]]);

    const b = await create();
    await g.built.ctx.database.db
      .updateTable("users")
      .set({ total_upload_bytes: 10 })
      .where("id", "=", owner.id)
      .execute();
    await setReleased(true);
    try {
      expect((await g.call("DELETE", `/upload/${b.id}`, { token: owner.token })).statusCode).toBe(204);
      expect(await userBytes(g, owner.id)).toBe(0);
      expect(await epoch()).toBe(e0 + 1);
    } finally {
      await setReleased(false);
    }
  });
});
