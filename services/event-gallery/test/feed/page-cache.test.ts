import { createTestEnv, testBackend } from "@app/kit/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadFeedItems } from "../../src/feed/serialize.js";
import { Delta, FeedPage } from "../../src/http/schemas.js";
import { type Gallery, seedUpload, startGallery } from "../core/harness.js";
import { setSettings, solidJpeg, upload } from "../media/helpers.js";

/**
 * /feed serves the viewer-independent part of a page from a per-process cache checked against the
 * database's feed stamp (migration 010). Every change a page can show must reach the very next
 * request, and no viewer's private state (likes, media token, pending uploads) may reach another.
 */
interface Item {
  id: string;
  caption: string;
  like_count: number;
  comment_count: number;
  liked_by_me: boolean;
  original_url: string | null;
  thumbnail_url: string | null;
}

async function feedOf(
  g: Gallery,
  token: string,
  query = "",
): Promise<{ items: Item[]; next_cursor: string | null }> {
  const res = await g.call("GET", `/feed${query}`, { token });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  // The text is built from a template, not by the route's serializer: check it against the schema.
  return FeedPage.parse(res.json()) as never;
}
const ids = (page: { items: Item[] }) => page.items.map((i) => i.id);
const byId = (page: { items: Item[] }, id: string) => page.items.find((i) => i.id === id);
/** Changes the caption and puts the feed stamp back (no real write does): returns the stamp. */
async function editBehindTheStamp(g: Gallery, id: string) {
  const { db } = g.built.ctx.database;
  const { n } = await db.selectFrom("feed_stamp").select("n").executeTakeFirstOrThrow();
  await db.updateTable("uploads").set({ caption: "behind the stamp" }).where("id", "=", id).execute();
  await db.updateTable("feed_stamp").set({ n }).where("id", "=", 1).execute();
  return n;
}
const tokenOf = (url: string | null) => new URL(`http://x${url}`).searchParams.get("t");

describe("the cached feed page", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
  });
  afterAll(async () => g?.close());

  it("is the page a fresh read gives, item for item, for each viewer", async () => {
    const owner = await g.join("Template Owner");
    const viewer = await g.join("Template Viewer");
    const a = await seedUpload(g, owner.id);
    await g.clock.advance(1000);
    const b = await seedUpload(g, owner.id);
    expect((await g.call("PUT", `/upload/${a}/like`, { token: viewer.token })).statusCode).toBe(200);
    for (let i = 0; i < 2; i++) {
      const page = await feedOf(g, viewer.token, "?limit=1");
      expect(ids(page)).toEqual([b]);
      const next = await feedOf(g, viewer.token, `?limit=1&cursor=${page.next_cursor}`);
      expect(ids(next)).toEqual([a]);
      const user = await g.built.ctx.auth.requireUser({
        headers: { authorization: `Bearer ${viewer.token}` },
        query: {},
        socket: {},
      } as never);
      const fresh = await loadFeedItems(g.built.ctx.database.db, [a], {
        id: viewer.id,
        mediaToken: await g.built.ctx.auth.mediaToken(user),
      });
      expect(next.items).toEqual(JSON.parse(JSON.stringify(fresh)));
      expect(next.items[0]?.liked_by_me).toBe(true);
    }
  });

  it("is really served from the cache while the stamp stands (so the tests below can fail)", async () => {
    const owner = await g.join("Stamp Owner");
    const viewer = await g.join("Stamp Viewer");
    const id = await seedUpload(g, owner.id);
    const { db } = g.built.ctx.database;
    expect(byId(await feedOf(g, viewer.token), id)?.caption).toBe("");
    // A write that (unlike every real one) puts the stamp back: the cached page stands.
    await editBehindTheStamp(g, id);
    expect(byId(await feedOf(g, viewer.token), id)?.caption).toBe("");
    // Any real write bumps it, by trigger, in its own transaction.
    await db.updateTable("uploads").set({ caption: "seen" }).where("id", "=", id).execute();
    expect(byId(await feedOf(g, viewer.token), id)?.caption).toBe("seen");
  });

  it("shows the viewer's own like and unlike on the very next page, though their likes were cached", async () => {
    const owner = await g.join("Own Like Owner");
    const viewer = await g.join("Own Like Viewer");
    const id = await seedUpload(g, owner.id);
    const item = async () => {
      await feedOf(g, viewer.token);
      return byId(await feedOf(g, viewer.token), id);
    };
    expect(await item()).toMatchObject({ liked_by_me: false, like_count: 0 });
    expect((await g.call("PUT", `/upload/${id}/like`, { token: viewer.token })).statusCode).toBe(200);
    expect(await item()).toMatchObject({ liked_by_me: true, like_count: 1 });
    expect((await g.call("DELETE", `/upload/${id}/like`, { token: viewer.token })).statusCode).toBe(200);
    expect(await item()).toMatchObject({ liked_by_me: false, like_count: 0 });
  });

  it("serves a viewer's liked_by_me from the cache while their revision stands (so the test above can fail)", async () => {
    const owner = await g.join("Liked Cache Owner");
    const viewer = await g.join("Liked Cache Viewer");
    const other = await g.join("Liked Cache Other");
    const id = await seedUpload(g, owner.id);
    const { db } = g.built.ctx.database;
    expect(byId(await feedOf(g, viewer.token), id)?.liked_by_me).toBe(false);
    expect(byId(await feedOf(g, other.token), id)?.liked_by_me).toBe(false);
    const rev = async () =>
      (
        await db
          .selectFrom("users")
          .select("viewer_rev")
          .where("id", "=", viewer.id)
          .executeTakeFirstOrThrow()
      ).viewer_rev;
    const r = await rev();
    // A like written behind the revision's back (every real one bumps it): the cached answer stands.
    await db
      .insertInto("likes")
      .values({ upload_id: id, user_id: viewer.id, created_at: g.clock.iso() })
      .execute();
    expect(Number(await rev())).toBe(Number(r) + 1);
    await db.updateTable("users").set({ viewer_rev: r }).where("id", "=", viewer.id).execute();
    expect(byId(await feedOf(g, viewer.token), id)?.liked_by_me).toBe(false);
    // Bumped: read again, for this viewer only.
    await db
      .updateTable("users")
      .set({ viewer_rev: Number(r) + 1 })
      .where("id", "=", viewer.id)
      .execute();
    expect(byId(await feedOf(g, viewer.token), id)?.liked_by_me).toBe(true);
    expect(byId(await feedOf(g, other.token), id)?.liked_by_me).toBe(false);
  });

  it("keeps the page through likes and comments: only the counts are read again", async () => {
    const owner = await g.join("Survive Owner");
    const fan = await g.join("Survive Fan");
    const viewer = await g.join("Survive Viewer");
    const id = await seedUpload(g, owner.id);
    const { db } = g.built.ctx.database;
    expect(byId(await feedOf(g, viewer.token), id)?.caption).toBe("");
    // An edit behind the feed stamp's back: whatever still shows it was served from the cached page.
    const n = await editBehindTheStamp(g, id);
    expect((await g.call("PUT", `/upload/${id}/like`, { token: fan.token })).statusCode).toBe(200);
    const c = await g.call("POST", `/upload/${id}/comments`, { token: fan.token, body: { text: "yes" } });
    expect(c.statusCode, c.body).toBe(201);
    expect(
      (await db.selectFrom("feed_stamp").select("n").executeTakeFirstOrThrow()).n,
      "reactions leave the feed stamp alone",
    ).toBe(n);
    expect(byId(await feedOf(g, viewer.token), id)).toMatchObject({
      caption: "",
      like_count: 1,
      comment_count: 1,
      liked_by_me: false,
    });
    expect(byId(await feedOf(g, fan.token), id)).toMatchObject({ caption: "", liked_by_me: true });
    // The delta of the same moment is cached too, and its counts follow as well.
    const cursor = Buffer.from(JSON.stringify([new Date(g.clock.now() - 60_000).toISOString(), ""])).toString(
      "base64url",
    );
    const delta = async () => {
      const res = await g.call("GET", `/feed/delta?cursor=${cursor}`, { token: viewer.token });
      expect(res.statusCode, res.body).toBe(200);
      const body = Delta.parse(res.json());
      return [...body.items, ...body.changes].find((i) => i.id === id);
    };
    expect(await delta()).toMatchObject({ like_count: 1 });
    expect((await g.call("DELETE", `/upload/${id}/like`, { token: fan.token })).statusCode).toBe(200);
    expect(await delta()).toMatchObject({ like_count: 0, liked_by_me: false });
    expect(byId(await feedOf(g, viewer.token), id)).toMatchObject({ caption: "", like_count: 0 });
  });

  it("never shows an upload after its owner deletes it, a host takes it down or its owner is banned", async () => {
    const admin = await g.adminToken();
    const host = await g.host("Cache Host");
    const owner = await g.join("Cache Owner");
    const viewer = await g.join("Cache Viewer");
    const [u1, u2, u3] = [
      await seedUpload(g, owner.id),
      await seedUpload(g, owner.id),
      await seedUpload(g, owner.id),
    ];
    const warm = async () => {
      await feedOf(g, viewer.token);
      return feedOf(g, viewer.token);
    };
    expect(ids(await warm())).toEqual(expect.arrayContaining([u1, u2, u3]));

    expect((await g.call("DELETE", `/upload/${u1}`, { token: owner.token })).statusCode).toBe(204);
    expect(ids(await feedOf(g, viewer.token))).not.toContain(u1);

    await warm();
    expect((await g.call("DELETE", `/host/upload/${u2}`, { token: host.token })).statusCode).toBe(204);
    expect(ids(await feedOf(g, viewer.token))).not.toContain(u2);

    await warm();
    expect((await g.call("POST", `/host/users/${owner.id}/ban`, { token: admin })).statusCode).toBe(200);
    expect(ids(await feedOf(g, viewer.token))).not.toContain(u3);
    expect((await g.call("POST", `/host/users/${owner.id}/unban`, { token: admin })).statusCode).toBe(200);
    expect(ids(await feedOf(g, viewer.token))).toContain(u3);
  });

  it("follows likes, comments, caption edits and a ban's effect on counts at once", async () => {
    const admin = await g.adminToken();
    const owner = await g.join("Count Owner");
    const fan = await g.join("Count Fan");
    const viewer = await g.join("Count Viewer");
    const posted = await upload(g, owner.token, await solidJpeg());
    expect(posted.statusCode, posted.body).toBe(201);
    const id = posted.json().upload.id as string;
    const item = async () => {
      await feedOf(g, viewer.token);
      return byId(await feedOf(g, viewer.token), id);
    };
    expect(await item()).toMatchObject({ like_count: 0, comment_count: 0, caption: "" });
    expect((await g.call("PUT", `/upload/${id}/like`, { token: fan.token })).statusCode).toBe(200);
    expect(await item()).toMatchObject({ like_count: 1, liked_by_me: false });
    const c = await g.call("POST", `/upload/${id}/comments`, { token: fan.token, body: { text: "so nice" } });
    expect(c.statusCode, c.body).toBe(201);
    expect(await item()).toMatchObject({ comment_count: 1 });
    const edit = await g.call("PATCH", `/upload/${id}`, {
      token: owner.token,
      body: { caption: "first dance" },
    });
    expect(edit.statusCode, edit.body).toBe(200);
    expect(await item()).toMatchObject({ caption: "first dance" });
    // A banned user's likes and comments leave the counts.
    expect((await g.call("POST", `/host/users/${fan.id}/ban`, { token: admin })).statusCode).toBe(200);
    expect(await item()).toMatchObject({ like_count: 0, comment_count: 0 });
    expect((await g.call("POST", `/host/users/${fan.id}/unban`, { token: admin })).statusCode).toBe(200);
    expect(await item()).toMatchObject({ like_count: 1, comment_count: 1 });
  });

  it("never hands one viewer's likes, media token or pending uploads to another", async () => {
    const owner = await g.join("Private Owner");
    const ann = await g.join("Private Ann");
    const bob = await g.join("Private Bob");
    const posted = await upload(g, owner.token, await solidJpeg());
    expect(posted.statusCode, posted.body).toBe(201);
    const id = posted.json().upload.id as string;
    expect((await g.call("PUT", `/upload/${id}/like`, { token: ann.token })).statusCode).toBe(200);
    // Ann's request builds the page; Bob's is served from it.
    const annItem = byId(await feedOf(g, ann.token), id);
    const bobItem = byId(await feedOf(g, bob.token), id);
    expect(annItem?.liked_by_me).toBe(true);
    expect(bobItem?.liked_by_me).toBe(false);
    expect(annItem?.like_count).toBe(1);
    expect(bobItem?.like_count).toBe(1);
    const annToken = tokenOf(annItem?.original_url ?? null);
    const bobToken = tokenOf(bobItem?.original_url ?? null);
    expect(annToken).toBeTruthy();
    expect(bobToken).toBeTruthy();
    expect(annToken).not.toBe(bobToken);
    // Each token opens the media for its own session only: Bob's works after Ann logs out.
    expect((await g.call("DELETE", "/session", { token: ann.token })).statusCode).toBe(204);
    expect(
      (await g.call("GET", `/upload/${id}/original?t=${encodeURIComponent(bobToken ?? "")}`)).statusCode,
    ).toBe(200);
    expect(
      (await g.call("GET", `/upload/${id}/original?t=${encodeURIComponent(annToken ?? "")}`)).statusCode,
    ).toBe(401);

    // Pre-moderation: a guest's pending upload is in their own /feed (marked pending), in nobody
    // else's, though both pages are asked for under the same stamp.
    await setSettings(g, { premoderation: true });
    const pending = await upload(g, bob.token, await solidJpeg());
    expect(pending.statusCode, pending.body).toBe(201);
    const pid = pending.json().upload.id as string;
    await feedOf(g, owner.token);
    expect(byId(await feedOf(g, bob.token), pid)).toMatchObject({ approval: "pending" });
    expect(ids(await feedOf(g, owner.token))).not.toContain(pid);
    const host = await g.host("Private Host");
    expect((await g.call("POST", `/host/upload/${pid}/approve`, { token: host.token })).statusCode).toBe(200);
    expect(ids(await feedOf(g, owner.token))).toContain(pid);
    await setSettings(g, { premoderation: false });
  });

  it("a logout and a ban of the viewer count on the very next request", async () => {
    const admin = await g.adminToken();
    const viewer = await g.join("Leaving Viewer");
    const other = await seedUpload(g, (await g.join("Other Owner")).id);
    await feedOf(g, viewer.token);
    await feedOf(g, viewer.token);
    expect((await g.call("POST", `/host/users/${viewer.id}/ban`, { token: admin })).statusCode).toBe(200);
    // Banned users keep read access but may not write.
    expect(ids(await feedOf(g, viewer.token))).toContain(other);
    expect((await g.call("PUT", `/upload/${other}/like`, { token: viewer.token })).statusCode).toBe(403);
    expect((await g.call("DELETE", "/session", { token: viewer.token })).statusCode).toBe(204);
    expect((await g.call("GET", "/feed", { token: viewer.token })).statusCode).toBe(401);
  });
});

describe.runIf(testBackend() === "postgres")("the cached feed page across two processes", () => {
  let env: Awaited<ReturnType<typeof createTestEnv>>;
  let a: Gallery;
  let b: Gallery;
  beforeAll(async () => {
    env = await createTestEnv("gallery_feedcache");
    a = await startGallery({ keepEnv: env });
    b = await startGallery({ keepEnv: env });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await env?.cleanup();
  });

  it("a change made on B shows on A's very next page, though A had the page cached", async () => {
    const admin = await b.adminToken();
    const owner = await a.join("Two Owner");
    const viewer = await a.join("Two Viewer");
    const fan = await a.join("Two Fan");
    const [u1, u2] = [await seedUpload(a, owner.id), await seedUpload(a, fan.id)];
    const warm = async () => {
      await feedOf(a, viewer.token);
      return feedOf(a, viewer.token);
    };
    expect(ids(await warm())).toEqual(expect.arrayContaining([u1, u2]));
    expect((await b.call("PUT", `/upload/${u1}/like`, { token: fan.token })).statusCode).toBe(200);
    expect(byId(await feedOf(a, viewer.token), u1)?.like_count).toBe(1);
    await warm();
    expect((await b.call("DELETE", `/upload/${u1}`, { token: owner.token })).statusCode).toBe(204);
    expect(ids(await feedOf(a, viewer.token))).not.toContain(u1);
    await warm();
    expect((await b.call("POST", `/host/users/${fan.id}/ban`, { token: admin })).statusCode).toBe(200);
    expect(ids(await feedOf(a, viewer.token))).not.toContain(u2);
    await warm();
    expect((await b.call("DELETE", "/session", { token: viewer.token })).statusCode).toBe(204);
    expect((await a.call("GET", "/feed", { token: viewer.token })).statusCode).toBe(401);
  });
});
