import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deltaPages, type Gallery, seedUpload, startGallery } from "../core/harness.js";

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
    const cursor = (await g.call("GET", "/feed", { token: ann.token })).json().delta_cursor as string;
    await g.clock.advance(10_000);
    expect((await g.call("POST", `/host/users/${bob.id}/unban`, { token: admin })).statusCode).toBe(200);
    await g.clock.advance(10_000);

    const pages = await deltaPages(g, ann.token, cursor, 2);
    const seen = new Set(pages.flatMap((p) => p.changes.map((c) => c.id)));
    const unhidden = new Set(pages.flatMap((p) => p.unhidden_user_ids));
    expect(pages.length).toBeGreaterThan(1);
    expect(unhidden).toEqual(new Set([bob.id]));
    expect([...seen].sort()).toEqual([...bobs].sort());
    expect(seen.has(kept)).toBe(false);
  });
});
