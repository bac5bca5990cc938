import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, setSettings, solidJpeg, startGallery, upload } from "./helpers.js";

type Item = { id: string; like_count: number; comment_count: number; liked_by_me: boolean; caption: string };
const ids = (items: Item[]) => items.map((i) => i.id);

describe("feed, delta and uploaders", () => {
  let g: Gallery;
  let ann: { token: string; id: string };
  let bob: { token: string; id: string };
  let cat: { token: string; id: string };
  let jpeg: Buffer;
  const made: string[] = [];

  async function post(who: { token: string }, caption: string, tags: string): Promise<string> {
    await g.clock.advance(1_000);
    const res = await upload(g, who.token, jpeg, [
      ["caption", caption],
      ["hashtags", tags],
    ]);
    expect(res.statusCode).toBe(201);
    return res.json().upload.id;
  }

  beforeAll(async () => {
    g = await startGallery();
    ann = await g.join("Ann");
    bob = await g.join("Bob");
    cat = await g.join("Cat");
    jpeg = await solidJpeg();
    made.push(await post(ann, "a1", "cake"));
    made.push(await post(bob, "b1", "beach"));
    made.push(await post(ann, "a2", "cake beach"));
    made.push(await post(cat, "c1", "party"));
    made.push(await post(bob, "b2", "cake"));
  });
  afterAll(async () => g.close());

  const feed = async (query = "", token = ann.token) => {
    const res = await g.call("GET", `/feed${query}`, { token });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { items: Item[]; next_cursor: string | null; delta_cursor: string };
  };

  it("lists newest first and pages by keyset cursor until next_cursor is null", async () => {
    const all = await feed();
    expect(ids(all.items)).toEqual([...made].reverse());
    expect(all.next_cursor).toBeNull();
    expect(typeof all.delta_cursor).toBe("string");
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await feed(`?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      expect(page.items.length).toBeLessThanOrEqual(2);
      seen.push(...ids(page.items));
      cursor = page.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...made].reverse());
  });

  it("clamps the limit at both ends and rejects a foreign cursor", async () => {
    expect((await feed("?limit=0")).items).toHaveLength(1);
    expect((await feed("?limit=-5")).items).toHaveLength(1);
    expect((await feed("?limit=1000")).items).toHaveLength(5);
    expect((await feed("?limit=abc")).items).toHaveLength(5);
    const bad = await g.call("GET", "/feed?cursor=bm9wZQ", { token: ann.token });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.field).toBe("cursor");
    expect((await g.call("GET", "/feed")).statusCode).toBe(401);
  });

  it("filters: hashtag exact, hashtags OR, uploader exact name AND", async () => {
    const [a1, b1, a2, c1, b2] = made;
    expect(ids((await feed("?hashtag=cake")).items)).toEqual([b2, a2, a1]);
    expect(ids((await feed("?hashtag=%23Cake")).items)).toEqual([b2, a2, a1]);
    expect(ids((await feed("?hashtag=cak")).items)).toEqual([]);
    expect(ids((await feed("?hashtags=beach,party")).items)).toEqual([c1, a2, b1]);
    expect(ids((await feed("?hashtags=cake&uploader=Bob")).items)).toEqual([b2]);
    expect(ids((await feed("?uploader=Ann")).items)).toEqual([a2, a1]);
    expect(ids((await feed("?uploader=ann")).items)).toEqual([]);
    expect(ids((await feed("?hashtag=bad-tag")).items)).toEqual([]);
  });

  it("counts likes and comments without banned users' rows; liked_by_me is the viewer's", async () => {
    const { db } = g.built.ctx.database;
    const target = made[0] as string;
    const troll = await g.join("Troll");
    const now = g.clock.iso();
    await db
      .insertInto("likes")
      .values([
        { upload_id: target, user_id: bob.id, created_at: now },
        { upload_id: target, user_id: troll.id, created_at: now },
      ])
      .execute();
    await db
      .insertInto("comments")
      .values([
        { id: newId(), upload_id: target, user_id: bob.id, text: "nice", created_at: now },
        { id: newId(), upload_id: target, user_id: troll.id, text: "meh", created_at: now },
        {
          id: newId(),
          upload_id: target,
          user_id: cat.id,
          text: "gone",
          created_at: now,
          deleted_at: now,
          deleted_by: "owner",
        },
      ])
      .execute();
    await db.updateTable("users").set({ is_banned: 1 }).where("id", "=", troll.id).execute();
    const asBob = (await feed("", bob.token)).items.find((i) => i.id === target);
    expect(asBob).toMatchObject({ like_count: 1, comment_count: 1, liked_by_me: true });
    const asAnn = (await feed("", ann.token)).items.find((i) => i.id === target);
    expect(asAnn).toMatchObject({ like_count: 1, comment_count: 1, liked_by_me: false });
  });

  it("hides deleted uploads and banned or hidden uploaders; /uploaders agrees", async () => {
    const { db } = g.built.ctx.database;
    const dan = await g.join("Dan");
    const danUpload = await post(dan, "d1", "");
    expect(ids((await feed()).items)).toContain(danUpload);
    let uploaders = (await g.call("GET", "/uploaders", { token: ann.token })).json().uploaders;
    expect(uploaders).toEqual([
      { id: ann.id, display_name: "Ann", upload_count: 2 },
      { id: bob.id, display_name: "Bob", upload_count: 2 },
      { id: cat.id, display_name: "Cat", upload_count: 1 },
      { id: dan.id, display_name: "Dan", upload_count: 1 },
    ]);
    await db
      .updateTable("users")
      .set({ is_banned: 1, uploads_hidden_at: g.clock.iso() })
      .where("id", "=", dan.id)
      .execute();
    expect(ids((await feed()).items)).not.toContain(danUpload);
    await db.updateTable("users").set({ is_banned: 0 }).where("id", "=", dan.id).execute();
    expect(ids((await feed()).items)).not.toContain(danUpload);
    await db.updateTable("users").set({ uploads_hidden_at: null }).where("id", "=", dan.id).execute();
    expect(ids((await feed()).items)).toContain(danUpload);
    expect((await g.call("DELETE", `/upload/${danUpload}`, { token: dan.token })).statusCode).toBe(204);
    expect(ids((await feed()).items)).not.toContain(danUpload);
    uploaders = (await g.call("GET", "/uploaders", { token: ann.token })).json().uploaders;
    expect(uploaders.map((u: { display_name: string }) => u.display_name)).toEqual(["Ann", "Bob", "Cat"]);
  });

  it("delta: new items, changes, removals and hidden users since the cursor, bounded with has_more", async () => {
    const { db } = g.built.ctx.database;
    // A delta cursor trails the clock by a few seconds (writes still committing are not missed).
    await g.clock.advance(10_000);
    const start = (await feed()).delta_cursor;
    await g.clock.advance(10_000);
    const [a1, b1] = made;
    const fresh = await post(cat, "c2", "new");
    const patched = await g.call("PATCH", `/upload/${a1}`, {
      token: ann.token,
      body: { caption: "a1 edited" },
    });
    expect(patched.statusCode).toBe(200);
    expect((await g.call("DELETE", `/upload/${b1}`, { token: bob.token })).statusCode).toBe(204);
    const c1 = made[3] as string;
    expect((await g.call("PUT", `/upload/${c1}/like`, { token: bob.token })).statusCode).toBe(200);
    const eve = await g.join("Eve");
    await db
      .updateTable("users")
      .set({ is_banned: 1, uploads_hidden_at: g.clock.iso() })
      .where("id", "=", eve.id)
      .execute();

    const delta = async (cursor: string, limit = "") => {
      const res = await g.call("GET", `/feed/delta?cursor=${encodeURIComponent(cursor)}${limit}`, {
        token: ann.token,
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json();
    };
    const d = await delta(start);
    expect(ids(d.items)).toEqual([fresh]);
    expect(d.changes.map((i: Item) => [i.id, i.caption, i.like_count])).toEqual([
      [a1, "a1 edited", 1],
      [c1, "c1", 1],
    ]);
    expect(d.removed_ids).toEqual([b1]);
    expect(d.hidden_user_ids).toEqual([eve.id]);
    expect(d.has_more).toBe(false);
    // Caught up: the returned cursor yields nothing new.
    const again = await delta(d.cursor);
    expect([again.items, again.changes, again.removed_ids, again.hidden_user_ids]).toEqual([[], [], [], []]);

    // Bounded: one upload per call, has_more until drained, nothing lost (clients dedupe by id).
    const collected: string[] = [];
    let cursor = start;
    for (let i = 0; i < 10; i++) {
      const page = await delta(cursor, "&limit=1");
      collected.push(...ids(page.items), ...ids(page.changes), ...page.removed_ids);
      cursor = page.cursor;
      if (!page.has_more) break;
    }
    expect([...new Set(collected)].sort()).toEqual([fresh, a1, b1, c1].sort());
    expect((await g.call("GET", "/feed/delta", { token: ann.token })).statusCode).toBe(422);
  });

  it("rate-limits /feed and /feed/delta per user with Retry-After", async () => {
    const zed = await g.join("Zed");
    await setSettings(g, { feed_rate_per_min: 2, delta_rate_per_min: 1 });
    try {
      const cursor = (await feed("", zed.token)).delta_cursor;
      await feed("", zed.token);
      const limited = await g.call("GET", "/feed", { token: zed.token });
      expect(limited.statusCode).toBe(429);
      expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
      // Another user has their own budget.
      expect((await g.call("GET", "/feed", { token: cat.token })).statusCode).toBe(200);
      const url = `/feed/delta?cursor=${encodeURIComponent(cursor)}`;
      expect((await g.call("GET", url, { token: zed.token })).statusCode).toBe(200);
      expect((await g.call("GET", url, { token: zed.token })).statusCode).toBe(429);
    } finally {
      await setSettings(g, { feed_rate_per_min: 240, delta_rate_per_min: 120 });
    }
  });
});
