import { newId } from "@app/kit/ids";
import { CompiledQuery } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as repo from "../../src/feed/repository.js";
import { deltaPages, type Gallery, seedUpload, startGallery } from "../core/harness.js";

/**
 * Issue 12 guarantees on both backends: the session cache never outlives a ban, demotion or
 * logout; the delta reports unlikes and unbans; the feed and delta queries use their indexes.
 */
describe("cached sessions stay authoritative", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
  });
  afterAll(async () => g.close());

  it("a ban, a demotion and a logout take effect on the very next request", async () => {
    const admin = await g.adminToken();
    const guest = await g.join("Cached Guest");
    const host = await g.host("Cached Host");
    const up = await seedUpload(g, host.id);
    // Warm every cache: the token's signature, the media token, the settings.
    for (let i = 0; i < 3; i++) {
      expect((await g.call("GET", "/feed", { token: guest.token })).statusCode).toBe(200);
      expect((await g.call("GET", "/host/users", { token: host.token })).statusCode).toBe(200);
    }
    expect((await g.call("PUT", `/upload/${up}/like`, { token: guest.token })).statusCode).toBe(200);

    expect((await g.call("POST", `/host/users/${guest.id}/ban`, { token: admin })).statusCode).toBe(200);
    const refused = await g.call("PUT", `/upload/${up}/like`, { token: guest.token });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe("banned");
    expect((await g.call("GET", "/me/context", { token: guest.token })).json().user.is_banned).toBe(true);

    expect((await g.call("POST", `/host/users/${host.id}/demote`, { token: admin })).statusCode).toBe(200);
    expect((await g.call("GET", "/host/users", { token: host.token })).statusCode).toBe(403);
    expect((await g.call("GET", "/me/context", { token: host.token })).json().user.role).toBe("guest");

    const feed = (await g.call("GET", "/feed", { token: host.token })).json();
    const thumb = new URL(`http://x${feed.items[0].original_url}`).searchParams.get("t") as string;
    expect(thumb.length).toBeLessThan(100);
    expect((await g.call("DELETE", "/session", { token: host.token })).statusCode).toBe(204);
    expect((await g.call("GET", "/feed", { token: host.token })).statusCode).toBe(401);
    // The media credential dies with the session too.
    expect((await g.call("GET", `/upload/${up}/original?t=${encodeURIComponent(thumb)}`)).statusCode).toBe(
      401,
    );
  });

  it("an unban and a promotion count at once too; a logout ends only its own session", async () => {
    const admin = await g.adminToken();
    const owner = await g.join("Warm Owner");
    const up = await seedUpload(g, owner.id);
    const guest = await g.join("Second Chance");
    const recovered = await g.call("POST", "/recover", { body: { name: "Second Chance", pin: guest.pin } });
    expect(recovered.statusCode).toBe(200);
    const other = recovered.json().token as string;
    const like = (token: string) => g.call("PUT", `/upload/${up}/like`, { token });

    expect((await g.call("POST", `/host/users/${guest.id}/ban`, { token: admin })).statusCode).toBe(200);
    // Warm the refusal on both sessions: a cache must not remember "banned" either.
    for (let i = 0; i < 2; i++)
      for (const t of [guest.token, other]) expect((await like(t)).json().error.code).toBe("banned");
    expect((await g.call("POST", `/host/users/${guest.id}/unban`, { token: admin })).statusCode).toBe(200);
    expect((await like(guest.token)).statusCode).toBe(200);
    expect((await like(other)).statusCode).toBe(200);

    for (let i = 0; i < 2; i++)
      expect((await g.call("GET", "/host/users", { token: other })).statusCode).toBe(403);
    expect((await g.call("POST", `/host/users/${guest.id}/promote`, { token: admin })).statusCode).toBe(200);
    expect((await g.call("GET", "/host/users", { token: other })).statusCode).toBe(200);
    expect((await g.call("GET", "/me/context", { token: guest.token })).json().user.role).toBe("host");

    // A logout revokes the session it was sent with, not the user's other sessions.
    expect((await g.call("DELETE", "/session", { token: guest.token })).statusCode).toBe(204);
    expect((await g.call("GET", "/feed", { token: guest.token })).statusCode).toBe(401);
    expect((await g.call("DELETE", "/session", { token: guest.token })).statusCode).toBe(401);
    expect((await g.call("GET", "/host/users", { token: other })).statusCode).toBe(200);
  });

  it("one media credential per viewer: every URL of a page, and the next page, carry the same token", async () => {
    const u = await g.join("Token Viewer");
    await seedUpload(g, u.id);
    await seedUpload(g, u.id);
    const tokensOf = (body: { items: { original_url: string }[] }) =>
      new Set(body.items.map((i) => new URL(`http://x${i.original_url}`).searchParams.get("t")));
    const a = tokensOf((await g.call("GET", "/feed", { token: u.token })).json());
    const b = tokensOf((await g.call("GET", "/feed", { token: u.token })).json());
    expect(a.size).toBe(1);
    expect([...b]).toEqual([...a]);
  });
});

describe("delta reports unlikes and unbans", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
  });
  afterAll(async () => g.close());

  it("an unlike changes the upload's counts; an unban lists the user and their uploads again", async () => {
    const admin = await g.adminToken();
    const ann = await g.join("Delta Ann");
    const bob = await g.join("Delta Bob");
    const up = await seedUpload(g, ann.id);
    const bobs = await seedUpload(g, bob.id);
    expect((await g.call("PUT", `/upload/${up}/like`, { token: bob.token })).statusCode).toBe(200);
    expect((await g.call("POST", `/host/users/${bob.id}/ban`, { token: admin })).statusCode).toBe(200);
    await g.clock.advance(10_000);
    const cursor = (await g.call("GET", "/feed", { token: ann.token })).json().delta_cursor as string;
    await g.clock.advance(10_000);

    expect((await g.call("POST", `/host/users/${bob.id}/unban`, { token: admin })).statusCode).toBe(200);
    expect((await g.call("DELETE", `/upload/${up}/like`, { token: bob.token })).statusCode).toBe(200);
    const d = (
      await g.call("GET", `/feed/delta?cursor=${encodeURIComponent(cursor)}`, { token: ann.token })
    ).json();
    expect(d.unhidden_user_ids).toEqual([bob.id]);
    const changed = new Map(d.changes.map((i: { id: string; like_count: number }) => [i.id, i.like_count]));
    expect(changed.get(up)).toBe(0);
    expect(changed.has(bobs)).toBe(true);
    expect(d.hidden_user_ids).toEqual([]);
  });

  it("a ban and an unban inside one window report the user as unhidden only; an unlike then a like report the last state", async () => {
    const admin = await g.adminToken();
    const ann = await g.join("Window Ann");
    const cara = await g.join("Window Cara");
    const caras = await seedUpload(g, cara.id);
    const anns = await seedUpload(g, ann.id);
    expect((await g.call("PUT", `/upload/${anns}/like`, { token: cara.token })).statusCode).toBe(200);
    await g.clock.advance(10_000);
    const cursor = (await g.call("GET", "/feed", { token: ann.token })).json().delta_cursor as string;
    await g.clock.advance(10_000);

    expect((await g.call("POST", `/host/users/${cara.id}/ban`, { token: admin })).statusCode).toBe(200);
    expect((await g.call("POST", `/host/users/${cara.id}/unban`, { token: admin })).statusCode).toBe(200);
    expect((await g.call("DELETE", `/upload/${anns}/like`, { token: cara.token })).statusCode).toBe(200);
    expect((await g.call("PUT", `/upload/${anns}/like`, { token: cara.token })).statusCode).toBe(200);
    expect((await g.call("DELETE", `/upload/${anns}/like`, { token: ann.token })).statusCode).toBe(200);
    const d = (
      await g.call("GET", `/feed/delta?cursor=${encodeURIComponent(cursor)}`, { token: ann.token })
    ).json();
    expect(d.hidden_user_ids).toEqual([]);
    expect(d.unhidden_user_ids).toEqual([cara.id]);
    expect(d.items).toEqual([]);
    const byId = new Map(
      d.changes.map((i: { id: string; like_count: number; liked_by_me: boolean }) => [i.id, i]),
    );
    expect(byId.has(caras)).toBe(true);
    expect(byId.get(anns)).toMatchObject({ like_count: 1, liked_by_me: false });
  });

  it("a ban and an unban change the counts on others' uploads the user liked or commented, and the delta says so", async () => {
    const admin = await g.adminToken();
    const ann = await g.join("Counts Ann");
    const dan = await g.join("Counts Dan");
    const liked = await seedUpload(g, ann.id);
    const commented = await seedUpload(g, ann.id);
    const untouched = await seedUpload(g, ann.id);
    expect((await g.call("PUT", `/upload/${liked}/like`, { token: dan.token })).statusCode).toBe(200);
    const c = await g.call("POST", `/upload/${commented}/comments`, {
      token: dan.token,
      body: { text: "Hi" },
    });
    expect(c.statusCode, c.body).toBe(201);
    const deltaSince = async (cursor: string) =>
      (await g.call("GET", `/feed/delta?cursor=${encodeURIComponent(cursor)}`, { token: ann.token })).json();
    const countsOf = (d: { changes: { id: string; like_count: number; comment_count: number }[] }) =>
      new Map(d.changes.map((i) => [i.id, [i.like_count, i.comment_count]]));

    await g.clock.advance(10_000);
    let cursor = (await g.call("GET", "/feed", { token: ann.token })).json().delta_cursor as string;
    await g.clock.advance(10_000);
    expect((await g.call("POST", `/host/users/${dan.id}/ban`, { token: admin })).statusCode).toBe(200);
    let d = await deltaSince(cursor);
    expect(d.hidden_user_ids).toEqual([dan.id]);
    let counts = countsOf(d);
    expect(counts.get(liked)).toEqual([0, 0]);
    expect(counts.get(commented)).toEqual([0, 0]);
    expect(counts.has(untouched)).toBe(false);

    cursor = d.cursor as string;
    await g.clock.advance(10_000);
    expect((await g.call("POST", `/host/users/${dan.id}/unban`, { token: admin })).statusCode).toBe(200);
    d = await deltaSince(cursor);
    expect(d.unhidden_user_ids).toEqual([dan.id]);
    counts = countsOf(d);
    expect(counts.get(liked)).toEqual([1, 0]);
    expect(counts.get(commented)).toEqual([0, 1]);
    expect(counts.has(untouched)).toBe(false);
  });

  it("pages through more likes and unlikes than one delta holds without losing any", async () => {
    const ann = await g.join("Paging Ann");
    const eve = await g.join("Paging Eve");
    const ups = [];
    for (let i = 0; i < 5; i++) ups.push(await seedUpload(g, ann.id));
    for (const up of ups)
      expect((await g.call("PUT", `/upload/${up}/like`, { token: eve.token })).statusCode).toBe(200);
    await g.clock.advance(10_000);
    const cursor = (await g.call("GET", "/feed", { token: ann.token })).json().delta_cursor as string;
    // Interleave the two streams: an upload edit (row change) between the unlikes.
    for (const [i, up] of ups.entries()) {
      await g.clock.advance(1_000);
      expect((await g.call("DELETE", `/upload/${up}/like`, { token: eve.token })).statusCode).toBe(200);
      if (i === 2) {
        const e = await g.call("PATCH", `/upload/${ups[0]}`, {
          token: ann.token,
          body: { caption: "Edited" },
        });
        expect(e.statusCode, e.body).toBe(200);
      }
    }
    await g.clock.advance(10_000);
    const pages = await deltaPages(g, ann.token, cursor, 2);
    const seen = new Map(pages.flatMap((p) => p.changes.map((c) => [c.id, c.like_count] as const)));
    expect(pages.length).toBeGreaterThan(1);
    expect([...seen.keys()].sort()).toEqual([...ups].sort());
    for (const up of ups) expect(seen.get(up)).toBe(0);
  });
});

describe("query plans", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
    const { db } = g.built.ctx.database;
    const users = await Promise.all(["P1", "P2", "P3"].map((n) => g.join(`Plan ${n}`)));
    // Enough rows that a planner prefers the index to a scan and sort.
    const rows = [];
    for (let i = 0; i < 3000; i++) {
      const at = new Date(Date.parse("2026-11-01T00:00:00.000Z") + i * 1000).toISOString();
      rows.push({
        id: newId(),
        user_id: (users[i % 3] as { id: string }).id,
        client_upload_id: null,
        media_type: "image" as const,
        mime_type: "image/jpeg",
        original_path: null,
        preview_path: null,
        display_path: null,
        thumbnail_path: null,
        original_size_bytes: 1,
        width: 1,
        height: 1,
        duration_s: null,
        derivative_last_error: null,
        deleted_at: i % 10 === 0 ? at : null,
        deleted_by: i % 10 === 0 ? ("owner" as const) : null,
        media_reclaimed_at: null,
        created_at: at,
        updated_at: at,
      });
    }
    for (let i = 0; i < rows.length; i += 500)
      await db
        .insertInto("uploads")
        .values(rows.slice(i, i + 500))
        .execute();
    await db.executeQuery(CompiledQuery.raw("ANALYZE"));
  });
  afterAll(async () => g.close());

  const plan = async (q: { compile(): CompiledQuery }): Promise<string> => {
    const { db, backend } = g.built.ctx.database;
    const c = q.compile();
    if (backend === "sqlite") {
      const r = await db.executeQuery<{ detail: string }>(
        CompiledQuery.raw(`EXPLAIN QUERY PLAN ${c.sql}`, [...c.parameters]),
      );
      return r.rows.map((x) => x.detail).join("\n");
    }
    const r = await db.executeQuery<{ "QUERY PLAN": string }>(
      CompiledQuery.raw(`EXPLAIN ${c.sql}`, [...c.parameters]),
    );
    return r.rows.map((x) => x["QUERY PLAN"]).join("\n");
  };

  it("the feed page walks the feed index newest first and does not sort", async () => {
    const { db, backend } = g.built.ctx.database;
    for (const before of [null, { created_at: "2026-11-01T00:30:00.000Z", id: "zzz" }]) {
      const p = await plan(repo.feedPageQuery(db, { tagsAny: [], uploader: null }, before, 31));
      if (backend === "sqlite") {
        expect(p).toMatch(/USING (COVERING )?INDEX uploads_feed/);
        expect(p).not.toMatch(/TEMP B-TREE/);
      } else {
        expect(p).toMatch(/Index (Only )?Scan( Backward)? using uploads_(visible_)?feed/);
        expect(p).not.toMatch(/Sort/);
      }
    }
  });

  it("the delta reads ranges of the change-time indexes", async () => {
    const { db, backend } = g.built.ctx.database;
    const at = "2026-11-01T00:49:00.000Z";
    const changes = await plan(repo.changesAfterQuery(db, at, "", 101));
    const social = await plan(repo.socialActivityQuery(db, at, "", 101));
    if (backend === "sqlite") {
      expect(changes).toMatch(/SEARCH u USING INDEX uploads_changed \(\(changed_at,id\)>\(\?,\?\)\)/);
      expect(changes).not.toMatch(/SCAN u\b/);
      expect(social).toMatch(
        /SEARCH a USING (COVERING )?INDEX upload_activity_changed \(\(changed_at,upload_id\)>\(\?,\?\)\)/,
      );
      expect(social).not.toMatch(/SCAN u\b/);
    } else {
      expect(changes).toMatch(/Index Scan using uploads_changed/);
      expect(changes).not.toMatch(/Seq Scan on uploads/);
      expect(social).not.toMatch(/Seq Scan on uploads/);
    }
  });
});
