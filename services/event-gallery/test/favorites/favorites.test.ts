import { writeFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, recordEvents, seedUpload, startGallery } from "../core/harness.js";
import { zipEntry, zipNames, zipTest } from "../export/fixtures.js";

/** Favourites and highlights (issue 27, contract "Live event"). */
describe("favourites and highlights", () => {
  let g: Gallery;
  let host: { token: string; id: string };
  let ann: { token: string; id: string };
  let ben: { token: string; id: string };
  const ups: string[] = [];

  type FeedItem = { id: string; favorited_by_me: boolean; highlight: boolean; liked_by_me: boolean };
  const feed = async (token: string, query = "") => {
    const res = await g.call("GET", `/feed${query}`, { token });
    expect(res.statusCode, res.body).toBe(200);
    return res.json() as { items: FeedItem[]; next_cursor: string | null; delta_cursor: string };
  };
  const item = async (token: string, id: string) => (await feed(token)).items.find((i) => i.id === id);
  const bytes = (id: string) => Buffer.from(`original bytes of ${id}`);

  beforeAll(async () => {
    g = await startGallery();
    host = await g.host("Hanna");
    ann = await g.join("Ann");
    ben = await g.join("Ben");
    const dir = join(g.built.ctx.paths.mediaDir, "originals");
    await mkdir(dir, { recursive: true });
    for (const who of [ben, ben, ann]) {
      const id = await seedUpload(g, who.id);
      await writeFile(join(dir, `${id}.jpg`), bytes(id));
      ups.push(id);
      g.clock.advance(1000);
    }
  });
  afterAll(async () => {
    await g.close();
  });

  it("stars idempotently; favorited_by_me is the viewer's own, on cached pages too", async () => {
    const [b1, b2] = ups as [string, string];
    // Both viewers read the same page first (cached), then Ann stars.
    expect((await item(ann.token, b1))?.favorited_by_me).toBe(false);
    expect((await item(ben.token, b1))?.favorited_by_me).toBe(false);
    for (let i = 0; i < 2; i++)
      expect((await g.call("PUT", `/upload/${b1}/favorite`, { token: ann.token })).statusCode).toBe(204);
    expect((await g.call("PUT", `/upload/${b2}/favorite`, { token: ann.token })).statusCode).toBe(204);
    expect((await item(ann.token, b1))?.favorited_by_me).toBe(true);
    expect((await item(ben.token, b1))?.favorited_by_me).toBe(false);
    expect((await feed(ann.token, "?favorites=1")).items.map((i) => i.id)).toEqual([b2, b1]);
    expect((await feed(ben.token, "?favorites=1")).items).toEqual([]);

    for (let i = 0; i < 2; i++)
      expect((await g.call("DELETE", `/upload/${b2}/favorite`, { token: ann.token })).statusCode).toBe(204);
    expect((await item(ann.token, b2))?.favorited_by_me).toBe(false);
    expect((await feed(ann.token, "?favorites=1")).items.map((i) => i.id)).toEqual([b1]);

    const unknown = await g.call("PUT", "/upload/00000000-0000-7000-8000-000000000000/favorite", {
      token: ann.token,
    });
    expect(unknown.statusCode).toBe(404);
    expect((await g.call("PUT", `/upload/${b1}/favorite`)).statusCode).toBe(401);
  });

  it("lets a banned guest keep starring (it is private), and hides removed uploads from the list", async () => {
    const carl = await g.join("Carl");
    await g.call("POST", `/host/users/${carl.id}/ban`, { token: host.token });
    expect((await g.call("PUT", `/upload/${ups[0]}/favorite`, { token: carl.token })).statusCode).toBe(204);
    expect((await feed(carl.token, "?favorites=1")).items.map((i) => i.id)).toEqual([ups[0]]);

    const gone = await seedUpload(g, ben.id);
    await g.call("PUT", `/upload/${gone}/favorite`, { token: ann.token });
    expect((await feed(ann.token, "?favorites=1")).items.map((i) => i.id)).toContain(gone);
    expect((await g.call("DELETE", `/host/upload/${gone}`, { token: host.token })).statusCode).toBe(204);
    expect((await feed(ann.token, "?favorites=1")).items.map((i) => i.id)).not.toContain(gone);
  });

  it("downloads the visible favourites as one streamed zip with a single-use ticket; 404 when none", async () => {
    const t = await g.call("POST", "/favorites/ticket", { token: ann.token });
    expect(t.statusCode).toBe(200);
    expect(t.json()).toEqual({ ticket: expect.any(String), expires_at: expect.any(String) });
    const res = await g.call("GET", `/favorites.zip?ticket=${encodeURIComponent(t.json().ticket)}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("application/zip");
    expect(res.headers["content-disposition"]).toBe('attachment; filename="Favorites.zip"');
    const file = join(g.dataDir, "fav.zip");
    writeFileSync(file, res.rawPayload);
    zipTest(file);
    const names = zipNames(file);
    expect(names).toHaveLength(1);
    expect(names[0]).toMatch(new RegExp(`^Ben/.*_${ups[0]}\\.jpg$`));
    expect(zipEntry(file, names[0] as string).equals(bytes(ups[0] as string))).toBe(true);

    const again = await g.call("GET", `/favorites.zip?ticket=${encodeURIComponent(t.json().ticket)}`);
    expect(again.statusCode).toBe(401);
    expect((await g.call("GET", "/favorites.zip")).statusCode).toBe(401);

    const none = await g.call("POST", "/favorites/ticket", { token: ben.token });
    const empty = await g.call("GET", `/favorites.zip?ticket=${encodeURIComponent(none.json().ticket)}`);
    expect(empty.statusCode).toBe(404);
    expect(empty.json().error.code).toBe("no_favorites");
  });

  it("lets hosts mark highlights: the feed item says so, ?highlights=1 lists them, the stream hears it", async () => {
    const [b1, , a1] = ups as [string, string, string];
    expect((await item(ann.token, a1))?.highlight).toBe(false);
    const guest = await g.call("PUT", `/host/upload/${a1}/highlight`, { token: ann.token });
    expect(guest.statusCode).toBe(403);
    const ev = recordEvents(g);
    for (let i = 0; i < 2; i++)
      expect((await g.call("PUT", `/host/upload/${a1}/highlight`, { token: host.token })).statusCode).toBe(
        204,
      );
    ev.stop();
    expect(ev.seen.filter((e) => e.event === "upload-updated").map((e) => e.data.id)).toEqual([a1]);
    // The cached page read above is not served stale.
    expect((await item(ann.token, a1))?.highlight).toBe(true);
    expect((await item(ann.token, b1))?.highlight).toBe(false);
    await g.call("PUT", `/host/upload/${b1}/highlight`, { token: host.token });
    expect((await feed(ben.token, "?highlights=1")).items.map((i) => i.id)).toEqual([a1, b1]);
    expect((await g.call("DELETE", `/host/upload/${b1}/highlight`, { token: host.token })).statusCode).toBe(
      204,
    );
    expect((await feed(ben.token, "?highlights=1")).items.map((i) => i.id)).toEqual([a1]);
    const audit = (await g.call("GET", "/host/audit", { token: host.token })).json().entries;
    expect(audit.slice(0, 3).map((e: { action: string }) => e.action)).toEqual([
      "unhighlight_upload",
      "highlight_upload",
      "highlight_upload",
    ]);
    expect(
      (
        await g.call("PUT", "/host/upload/00000000-0000-7000-8000-000000000000/highlight", {
          token: host.token,
        })
      ).statusCode,
    ).toBe(404);
  });
});
