import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { epoch, type Gallery, recordEvents, release, seedUpload, startGallery } from "./harness.js";

describe("social: likes and comments", () => {
  let g: Gallery;
  let owner: { token: string; id: string };
  let fan: { token: string; id: string };
  let admin: string;
  beforeAll(async () => {
    g = await startGallery();
    owner = await g.join("Owner");
    fan = await g.join("Fan");
    admin = await g.adminToken();
  });
  afterAll(async () => {
    await g.close();
  });

  it("likes idempotently and publishes the count", async () => {
    const up = await seedUpload(g, owner.id);
    const ev = recordEvents(g);
    const put = async (token: string) => (await g.call("PUT", `/upload/${up}/like`, { token })).json();
    expect(await put(fan.token)).toEqual({ liked: true, like_count: 1 });
    expect(await put(fan.token)).toEqual({ liked: true, like_count: 1 });
    expect(await put(owner.token)).toEqual({ liked: true, like_count: 2 });
    const del = await g.call("DELETE", `/upload/${up}/like`, { token: fan.token });
    expect(del.statusCode).toBe(200);
    expect(del.json()).toEqual({ liked: false, like_count: 1 });
    expect((await g.call("DELETE", `/upload/${up}/like`, { token: fan.token })).json()).toEqual({
      liked: false,
      like_count: 1,
    });
    ev.stop();
    expect(ev.seen.filter((e) => e.event === "like").at(-1)?.data).toEqual({ upload_id: up, like_count: 1 });
    expect((await g.call("PUT", `/upload/${up}/like`)).statusCode).toBe(401);
  });

  it("answers 404 for unknown, deleted and hidden uploads", async () => {
    const deleted = await seedUpload(g, owner.id);
    await g.built.ctx.database.db
      .updateTable("uploads")
      .set({ deleted_at: g.clock.iso(), deleted_by: "owner" })
      .where("id", "=", deleted)
      .execute();
    for (const id of [newId(), "not-a-uuid", deleted]) {
      const like = await g.call("PUT", `/upload/${id}/like`, { token: fan.token });
      expect(like.statusCode, id).toBe(404);
      expect(like.json().error.code).toBe("not_found");
      expect((await g.call("GET", `/upload/${id}/comments`, { token: fan.token })).statusCode).toBe(404);
      expect(
        (await g.call("POST", `/upload/${id}/comments`, { token: fan.token, body: { text: "hi" } }))
          .statusCode,
      ).toBe(404);
    }
  });

  it("adds comments (trimmed, 1..500 chars) and lists them oldest first", async () => {
    const up = await seedUpload(g, owner.id);
    const ev = recordEvents(g);
    const first = await g.call("POST", `/upload/${up}/comments`, {
      token: fan.token,
      body: { text: "  first  " },
    });
    expect(first.statusCode).toBe(201);
    expect(first.json().comment).toEqual({
      id: expect.any(String),
      upload_id: up,
      user: { id: fan.id, display_name: "Fan" },
      text: "first",
      created_at: g.clock.iso(),
    });
    await g.clock.advance(1000);
    const longest = "é".repeat(500);
    expect(
      (await g.call("POST", `/upload/${up}/comments`, { token: owner.token, body: { text: longest } }))
        .statusCode,
    ).toBe(201);
    for (const text of ["", "    ", "x".repeat(501)]) {
      const bad = await g.call("POST", `/upload/${up}/comments`, { token: fan.token, body: { text } });
      expect(bad.statusCode).toBe(422);
      expect(bad.json().error).toMatchObject({ code: "validation_failed", field: "text" });
    }
    const list = await g.call("GET", `/upload/${up}/comments`, { token: fan.token });
    expect(list.json().comments.map((c: { text: string }) => c.text)).toEqual(["first", longest]);
    ev.stop();
    expect(ev.seen.filter((e) => e.event === "comment-added")).toHaveLength(2);
  });

  it("deletes only your own comment; bumps the epoch after release; refuses banned users first", async () => {
    const up = await seedUpload(g, owner.id);
    const mine = (
      await g.call("POST", `/upload/${up}/comments`, { token: fan.token, body: { text: "mine" } })
    ).json().comment.id;
    const other = await g.call("DELETE", `/comment/${mine}`, { token: owner.token });
    expect(other.statusCode).toBe(403);
    expect(other.json().error.code).toBe("not_owner");

    const troll = await g.join("Troll");
    const trollComment = (
      await g.call("POST", `/upload/${up}/comments`, { token: troll.token, body: { text: "spam" } })
    ).json().comment.id;
    await g.call("PUT", `/upload/${up}/like`, { token: troll.token });
    expect((await g.call("POST", `/host/users/${troll.id}/ban`, { token: admin })).statusCode).toBe(200);
    // The ban check runs before the ownership check.
    const banned = await g.call("DELETE", `/comment/${mine}`, { token: troll.token });
    expect(banned.statusCode).toBe(403);
    expect(banned.json().error.code).toBe("banned");
    expect(
      (await g.call("DELETE", `/comment/${trollComment}`, { token: troll.token })).json().error.code,
    ).toBe("banned");
    expect((await g.call("PUT", `/upload/${up}/like`, { token: troll.token })).json().error.code).toBe(
      "banned",
    );
    // Banned users' comments and likes are neither shown nor counted; they can still read.
    const list = await g.call("GET", `/upload/${up}/comments`, { token: troll.token });
    expect(list.statusCode).toBe(200);
    expect(list.json().comments.map((c: { id: string }) => c.id)).toEqual([mine]);
    expect((await g.call("PUT", `/upload/${up}/like`, { token: fan.token })).json().like_count).toBe(1);

    await release(g);
    const before = await epoch(g);
    const ev = recordEvents(g);
    expect((await g.call("DELETE", `/comment/${mine}`, { token: fan.token })).statusCode).toBe(204);
    expect(await epoch(g)).toBe(before + 1);
    expect((await g.call("DELETE", `/comment/${mine}`, { token: fan.token })).statusCode).toBe(404);
    ev.stop();
    expect(ev.seen).toContainEqual({
      event: "comment-removed",
      data: { upload_id: up, comment_id: mine },
      hostsOnly: false,
    });
    const row = await g.built.ctx.database.db
      .selectFrom("comments")
      .select(["deleted_by"])
      .where("id", "=", mine)
      .executeTakeFirstOrThrow();
    expect(row.deleted_by).toBe("owner");
  });

  it("shares one bucket of 120 social writes per minute per user", async () => {
    const up = await seedUpload(g, owner.id);
    const heavy = await g.join("Heavy");
    for (let i = 0; i < 60; i++) {
      const r = await g.call(i % 2 ? "PUT" : "DELETE", `/upload/${up}/like`, { token: heavy.token });
      expect(r.statusCode).toBe(200);
    }
    for (let i = 0; i < 60; i++) {
      const r = await g.call("POST", `/upload/${up}/comments`, {
        token: heavy.token,
        body: { text: `c${i}` },
      });
      expect(r.statusCode).toBe(201);
    }
    const limited = await g.call("PUT", `/upload/${up}/like`, { token: heavy.token });
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe("rate_limited");
    expect(limited.headers["retry-after"]).toBeDefined();
    // Another user is unaffected; the bucket refills after the window.
    expect((await g.call("PUT", `/upload/${up}/like`, { token: fan.token })).statusCode).toBe(200);
    await g.clock.advance(60_000);
    expect((await g.call("PUT", `/upload/${up}/like`, { token: heavy.token })).statusCode).toBe(200);
  });
});
