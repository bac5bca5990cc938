import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, release, seedUpload, startGallery } from "../core/harness.js";
import { setSettings } from "../media/helpers.js";

/** Upload-only mode (issue 27, contract "Live event"): guests see their own until the release. */
describe("upload-only mode", () => {
  let g: Gallery;
  let admin: string;
  let host: { token: string; id: string };
  let ann: { token: string; id: string };
  let ben: { token: string; id: string };
  let annUp: string;
  let benUp: string;
  let hostUp: string;

  const ids = async (token: string, path = "/feed") => {
    const res = await g.call("GET", path, { token });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().items as { id: string }[]).map((i) => i.id);
  };
  const withFile = async (id: string) => {
    const dir = join(g.built.ctx.paths.mediaDir, "originals");
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, `${id}.jpg`), Buffer.from("jpeg bytes"));
    return id;
  };

  beforeAll(async () => {
    g = await startGallery();
    admin = await g.adminToken();
    host = await g.host("Hosting Hanna");
    ann = await g.join("Ann");
    ben = await g.join("Ben");
    annUp = await withFile(await seedUpload(g, ann.id));
    g.clock.advance(1000);
    benUp = await withFile(await seedUpload(g, ben.id));
    g.clock.advance(1000);
    hostUp = await withFile(await seedUpload(g, host.id));
    await setSettings(g, { upload_only: true });
  });
  afterAll(async () => {
    await g.close();
  });

  it("shows a guest only their own uploads in /feed, /uploaders and the media routes", async () => {
    const page = (await g.call("GET", "/feed", { token: ann.token })).json();
    expect(page.items.map((i: { id: string }) => i.id)).toEqual([annUp]);
    expect(page.delta_cursor).toEqual(expect.any(String));
    expect(page.next_cursor).toBeNull();
    expect(await ids(ben.token)).toEqual([benUp]);
    expect(await ids(ann.token, "/feed?uploader=Ben")).toEqual([annUp]);
    const uploaders = (await g.call("GET", "/uploaders", { token: ann.token })).json().uploaders;
    expect(uploaders.map((u: { id: string }) => u.id)).toEqual([ann.id]);

    expect((await g.call("GET", `/upload/${annUp}/original`, { token: ann.token })).statusCode).toBe(200);
    const other = await g.call("GET", `/upload/${benUp}/original`, { token: ann.token });
    expect(other.statusCode).toBe(404);
    expect(other.json().error.code).toBe("not_found");
    expect((await g.call("GET", `/upload/${hostUp}/original`, { token: ann.token })).statusCode).toBe(404);

    const me = (await g.call("GET", "/me/context", { token: ann.token })).json();
    expect(me.event.upload_only).toBe(true);
  });

  it("lets hosts and the admin see everything", async () => {
    for (const token of [host.token, admin]) {
      expect(await ids(token)).toEqual([hostUp, benUp, annUp]);
      expect((await g.call("GET", `/upload/${annUp}/original`, { token })).statusCode).toBe(200);
      expect((await g.call("GET", "/uploaders", { token })).json().uploaders).toHaveLength(3);
    }
  });

  it("keeps others' new uploads out of a guest's delta", async () => {
    g.clock.advance(10_000);
    const cursor = (await g.call("GET", "/feed", { token: ann.token })).json().delta_cursor;
    const hostCursor = (await g.call("GET", "/feed", { token: host.token })).json().delta_cursor;
    g.clock.advance(10_000);
    const fresh = await seedUpload(g, ben.id);
    const mine = await seedUpload(g, ann.id);
    g.clock.advance(10_000);
    const delta = (await g.call("GET", `/feed/delta?cursor=${cursor}`, { token: ann.token })).json();
    const seen = delta.items.map((i: { id: string }) => i.id);
    expect(seen).toContain(mine);
    expect(seen).not.toContain(fresh);
    expect(delta.items.every((i: { uploader: { id: string } }) => i.uploader.id === ann.id)).toBe(true);
    const hostDelta = (await g.call("GET", `/feed/delta?cursor=${hostCursor}`, { token: host.token })).json();
    expect(hostDelta.items.map((i: { id: string }) => i.id)).toEqual(expect.arrayContaining([fresh, mine]));
  });

  it("ends with the release, and when the admin turns it off", async () => {
    await setSettings(g, { upload_only: false });
    expect((await ids(ann.token)).length).toBeGreaterThan(2);
    expect((await g.call("GET", "/me/context", { token: ann.token })).json().event.upload_only).toBe(false);
    await setSettings(g, { upload_only: true });
    expect(await ids(ann.token)).not.toContain(benUp);
    await release(g);
    expect(await ids(ann.token)).toContain(benUp);
    expect((await g.call("GET", `/upload/${benUp}/original`, { token: ann.token })).statusCode).toBe(200);
    expect((await g.call("GET", "/me/context", { token: ann.token })).json().event.upload_only).toBe(false);
  });
});
