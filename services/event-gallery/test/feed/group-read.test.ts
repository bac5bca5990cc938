import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { liveSessions } from "../../src/auth/repository.js";
import { likedReader } from "../../src/feed/liked-batch.js";
import { FeedPage } from "../../src/http/schemas.js";
import { groupRead } from "../../src/limits/group-read.js";
import { type Gallery, seedUpload, startGallery } from "../core/harness.js";

/**
 * Concurrent session reads and liked_by_me reads of /feed go to the database together (one
 * statement per batch). Each request must still get exactly its own answer, read after it arrived.
 */
function deferred<T>() {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

describe("groupRead", () => {
  it("sends the first request at once and the ones that arrive meanwhile together, after they arrived", async () => {
    const calls: { batch: readonly number[]; done: ReturnType<typeof deferred<void>> }[] = [];
    const read = groupRead(async (batch: readonly number[]) => {
      const done = deferred<void>();
      calls.push({ batch: [...batch], done });
      await done.promise;
      return batch.map((n) => n * 10);
    });
    const first = read(1);
    expect(calls.map((c) => c.batch)).toEqual([[1]]);
    // Arrive while the first statement is in flight: not in it, so they are read after they came.
    const later = [read(2), read(3), read(2)];
    expect(calls).toHaveLength(1);
    calls[0]?.done.resolve();
    expect(await first).toBe(10);
    await Promise.resolve();
    expect(calls.map((c) => c.batch)).toEqual([[1], [2, 3, 2]]);
    calls[1]?.done.resolve();
    expect(await Promise.all(later)).toEqual([20, 30, 20]);
  });

  it("fails only the batch whose statement failed, and caps a batch", async () => {
    const seen: number[][] = [];
    let fail = true;
    const read = groupRead(async (batch: readonly number[]) => {
      seen.push([...batch]);
      await Promise.resolve();
      if (fail) {
        fail = false;
        throw new Error("boom");
      }
      return batch.map((n) => -n);
    }, 2);
    const a = read(1);
    const rest = [read(2), read(3), read(4)];
    await expect(a).rejects.toThrow("boom");
    expect(await Promise.all(rest)).toEqual([-2, -3, -4]);
    expect(seen).toEqual([[1], [2, 3], [4]]);
  });

  it("refuses a run that does not answer every request", async () => {
    const read = groupRead(async (_batch: readonly number[]) => [] as number[]);
    await expect(read(1)).rejects.toThrow(/one answer per request/);
  });
});

describe("batched session and liked_by_me reads", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
  });
  afterAll(async () => g?.close());

  it("gives each of many concurrent /feed requests its own user, likes and media token", async () => {
    const owner = await g.join("Batch Owner");
    const items = [
      await seedUpload(g, owner.id),
      await seedUpload(g, owner.id),
      await seedUpload(g, owner.id),
    ];
    const viewers = [];
    for (let i = 0; i < 6; i++) viewers.push(await g.join(`Batch Viewer ${i}`));
    // Viewer i likes item i % 3 (and viewer 0 likes nothing).
    for (const [i, v] of viewers.entries())
      if (i > 0) {
        const res = await g.call("PUT", `/upload/${items[i % 3]}/like`, { token: v.token });
        expect(res.statusCode).toBe(200);
      }
    const left = await g.join("Batch Leaver");
    expect((await g.call("DELETE", "/session", { token: left.token })).statusCode).toBe(204);

    for (let round = 0; round < 2; round++) {
      const all = [...viewers, left, ...viewers];
      const answers = await Promise.all(all.map((v) => g.call("GET", "/feed", { token: v.token })));
      for (const [k, res] of answers.entries()) {
        const v = all[k];
        if (v === left) {
          expect(res.statusCode).toBe(401);
          continue;
        }
        expect(res.statusCode, res.body).toBe(200);
        const page = FeedPage.parse(res.json());
        const i = viewers.indexOf(v as (typeof viewers)[number]);
        const liked = page.items.filter((it) => it.liked_by_me).map((it) => it.id);
        expect(liked).toEqual(i > 0 ? [items[i % 3]] : []);
        const urls = page.items.map((it) => it.thumbnail_url ?? it.original_url).filter(Boolean);
        expect(urls.length).toBeGreaterThan(0);
        // Each media token opens the media for its own session only.
        const t = new URL(`http://x${urls[0]}`).searchParams.get("t") ?? "";
        const check = await g.built.ctx.auth.requireUser({ headers: {}, query: { t }, socket: {} } as never, {
          allowMediaToken: true,
        });
        expect(check.id).toBe(v?.id);
      }
    }
  });

  it("liveSessions answers only live sessions, each with its own user", async () => {
    const a = await g.join("Rows A");
    const b = await g.join("Rows B");
    const { reader } = g.built.ctx.database;
    const sid = async (token: string) =>
      (
        await g.built.ctx.auth.requireUser({
          headers: { authorization: `Bearer ${token}` },
          query: {},
          socket: {},
        } as never)
      ).sessionId;
    const [sa, sb] = [await sid(a.token), await sid(b.token)];
    expect((await g.call("DELETE", "/session", { token: b.token })).statusCode).toBe(204);
    const rows = await liveSessions(reader, [sa, sb, "no-such-session"], g.clock.iso());
    expect(rows.map((r) => [r.session_id, r.id])).toEqual([[sa, a.id]]);
    expect(Number(rows[0]?.feed_stamp)).toBeGreaterThan(0);
  });

  it("likedReader reads a like committed before the request, and only the viewer's own", async () => {
    const owner = await g.join("Liked Owner");
    const ann = await g.join("Liked Ann");
    const bob = await g.join("Liked Bob");
    const x = await seedUpload(g, owner.id);
    const y = await seedUpload(g, owner.id);
    const liked = likedReader(g.built.ctx.database);
    expect((await g.call("PUT", `/upload/${x}/like`, { token: ann.token })).statusCode).toBe(200);
    expect((await g.call("PUT", `/upload/${y}/like`, { token: bob.token })).statusCode).toBe(200);
    const [ax, bx, by] = await Promise.all([
      liked(ann.id, [x, y]),
      liked(bob.id, [x]),
      liked(bob.id, [x, y]),
    ]);
    expect([...ax]).toEqual([x]);
    expect([...bx]).toEqual([]);
    expect([...by]).toEqual([y]);
    expect((await g.call("DELETE", `/upload/${x}/like`, { token: ann.token })).statusCode).toBe(200);
    expect([...(await liked(ann.id, [x, y]))]).toEqual([]);
  });
});
