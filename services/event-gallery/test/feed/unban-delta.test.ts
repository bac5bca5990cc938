import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, seedUpload, startGallery } from "../core/harness.js";

/**
 * An unban shows all of the user's uploads again: /feed/delta reports every one of them in
 * `changes`, across as many calls as `limit` needs (has_more and the cursor carry the rest).
 */
describe("an unban of a user with more uploads than one delta holds", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
  });
  afterAll(async () => g?.close());

  it("reports every upload of the unbanned user, paging with has_more", async () => {
    const admin = await g.adminToken();
    const ann = await g.join("Paging Ann");
    const bob = await g.join("Paging Bob");
    const bobs: string[] = [];
    for (let i = 0; i < 5; i++) {
      bobs.push(await seedUpload(g, bob.id));
      await g.clock.advance(1000);
    }
    const kept = await seedUpload(g, ann.id);
    expect((await g.call("POST", `/host/users/${bob.id}/ban`, { token: admin })).statusCode).toBe(200);
    await g.clock.advance(10_000);
    let cursor = (await g.call("GET", "/feed", { token: ann.token })).json().delta_cursor as string;
    await g.clock.advance(10_000);
    expect((await g.call("POST", `/host/users/${bob.id}/unban`, { token: admin })).statusCode).toBe(200);
    await g.clock.advance(10_000);

    const seen = new Set<string>();
    const unhidden = new Set<string>();
    let calls = 0;
    for (;;) {
      const res = await g.call("GET", `/feed/delta?limit=2&cursor=${encodeURIComponent(cursor)}`, {
        token: ann.token,
      });
      expect(res.statusCode, res.body).toBe(200);
      const d = res.json();
      for (const c of d.changes as { id: string }[]) seen.add(c.id);
      for (const u of d.unhidden_user_ids as string[]) unhidden.add(u);
      cursor = d.cursor;
      calls++;
      if (!d.has_more) break;
      expect(calls).toBeLessThan(10);
    }
    expect(calls).toBeGreaterThan(1);
    expect(unhidden).toEqual(new Set([bob.id]));
    expect([...seen].sort()).toEqual([...bobs].sort());
    expect(seen.has(kept)).toBe(false);
  });
});
