import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, startGallery } from "../core/harness.js";
import { addComment, addUpload, type FixtureUpload, zipEntry, zipNames, zipTest } from "./fixtures.js";

/**
 * Release → build → download, through the HTTP API with the app's own export worker, on a
 * FakeClock. Archives are read back with Info-ZIP's unzip.
 */
describe("keepsake export", () => {
  let g: Gallery;
  let admin: string;
  let alice: { token: string; id: string };
  let bob: { token: string; id: string };
  let uploads: FixtureUpload[];
  const disk = { free: 50e9 };
  const published: { event: string; data: Record<string, unknown> }[] = [];

  const waitFor = (event: string, pred: (d: Record<string, unknown>) => boolean = () => true) =>
    new Promise<Record<string, unknown>>((resolve) => {
      const off = g.built.ctx.bus.subscribe((e, d) => {
        if (e === event && pred(d)) {
          off();
          resolve(d);
        }
      });
    });
  const bothReady = () =>
    Promise.all([
      waitFor("export-ready", (d) => d.kind === "zip"),
      waitFor("export-ready", (d) => d.kind === "html"),
    ]);

  const download = async (token: string, kind: "zip" | "html") => {
    const t = await g.call("POST", "/export/ticket", { token, body: { kind } });
    expect(t.statusCode, t.body).toBe(201);
    const res = await g.call("GET", `/export/${kind}/download?ticket=${encodeURIComponent(t.json().ticket)}`);
    return res;
  };
  const saveZip = (body: Buffer, name: string) => {
    const file = join(g.dataDir, name);
    writeFileSync(file, body);
    return file;
  };

  beforeAll(async () => {
    g = await startGallery({
      deps: { disk: { stat: async () => ({ free_bytes: disk.free, total_bytes: 100e9 }) } },
    });
    // Only what this module publishes (other workers publish their own events on the same bus).
    g.built.ctx.bus.subscribe((event, data) => {
      if (/^(event-|export-)/.test(event)) published.push({ event, data });
    });
    admin = await g.adminToken();
    alice = await g.join("Alice: the/first");
    bob = await g.join("Bob");
    uploads = [
      await addUpload(g, alice.id, {
        caption: "Sunset <b>over</b> the lake",
        hashtags: ["lake", "sunset"],
        hue: 10,
      }),
      await addUpload(g, bob.id, { caption: "Dance floor", hashtags: ["party"], hue: 200 }),
      await addUpload(g, bob.id, { caption: "First dance video", video: true }),
    ];
    await addComment(g, uploads[0]!.id, bob.id, "Wow, so pretty!");
    g.built.startWorkers();
  });
  afterAll(async () => {
    await g.close();
  });

  it("reports no keepsake before the release and answers ticket requests with 404 not_ready", async () => {
    const status = await g.call("GET", "/export/status", { token: alice.token });
    expect(status.statusCode).toBe(200);
    expect(status.json()).toEqual({
      released: false,
      epoch: 0,
      zip: { status: "none", progress_pct: 0, ready: false },
      html: { status: "none", progress_pct: 0, ready: false },
    });
    const t = await g.call("POST", "/export/ticket", { token: alice.token, body: { kind: "zip" } });
    expect(t.statusCode).toBe(404);
    expect(t.json().error.code).toBe("not_ready");
    const bad = await g.call("POST", "/export/ticket", { token: alice.token, body: { kind: "tar" } });
    expect(bad.statusCode).toBe(422);
  });

  it("shows hosts the event with disk figures, and refuses guests", async () => {
    expect((await g.call("GET", "/host/event", { token: alice.token })).statusCode).toBe(403);
    const res = await g.call("GET", "/host/event", { token: admin });
    expect(res.statusCode).toBe(200);
    const originals = uploads.reduce((n, u) => n + u.original.length, 0);
    expect(res.json()).toMatchObject({
      event: { uploads_locked: false, released: false, keepsake_ready: false },
      uploads_locked_at: null,
      export_released_at: null,
      export_epoch: 0,
      low_disk_warning: false,
      free_bytes: 50e9,
      // Before a release the estimate covers both archives a release would arm.
      keepsake_estimate_bytes: Math.ceil(originals * 1.1) * 2,
    });
    disk.free = 9e9;
    expect((await g.call("GET", "/host/event", { token: admin })).json().low_disk_warning).toBe(true);
    disk.free = 50e9;
  });

  it("locks and unlocks uploads, 409 invalid_state when not applicable", async () => {
    const lock = await g.call("POST", "/host/event/lock", { token: admin });
    expect(lock.statusCode).toBe(200);
    expect(lock.json().event).toMatchObject({ uploads_locked: true, released: false });
    expect(published.at(-1)?.event).toBe("event-closed");
    const again = await g.call("POST", "/host/event/lock", { token: admin });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe("invalid_state");
    const unlock = await g.call("POST", "/host/event/unlock", { token: admin });
    expect(unlock.json().event.uploads_locked).toBe(false);
    expect(published.at(-1)?.event).toBe("event-opened");
    expect((await g.call("POST", "/host/event/unlock", { token: admin })).statusCode).toBe(409);
    expect((await g.call("POST", "/host/event/reopen", { token: admin })).statusCode).toBe(409);
    expect((await g.call("POST", "/host/event/lock", { token: alice.token })).statusCode).toBe(403);
  });

  it("release locks uploads, bumps the epoch and arms both jobs; the builders produce both archives", async () => {
    const ready = bothReady();
    const res = await g.call("POST", "/host/event/release", { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.json().event).toMatchObject({ uploads_locked: true, released: true, keepsake_ready: false });
    expect((await g.call("POST", "/host/event/release", { token: admin })).statusCode).toBe(409);
    expect((await g.call("POST", "/host/event/unlock", { token: admin })).statusCode).toBe(409);
    await ready;

    const status = (await g.call("GET", "/export/status", { token: alice.token })).json();
    expect(status).toEqual({
      released: true,
      epoch: 1,
      zip: { status: "done", progress_pct: 100, ready: true },
      html: { status: "done", progress_pct: 100, ready: true },
    });
    const ev = (await g.call("GET", "/host/event", { token: admin })).json();
    expect(ev.export_epoch).toBe(1);
    expect(ev.export_released_at).toBe(ev.uploads_locked_at);
    expect(ev.event.keepsake_ready).toBe(true);
    // Nothing half-written is left behind.
    expect(readdirSync(g.built.ctx.paths.exportsDir).filter((f) => f.startsWith(".tmp-"))).toEqual([]);
  });

  it("Gallery.zip holds every visible original under <name>/<created_at>_<id>.<ext>", async () => {
    const res = await download(alice.token, "zip");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toBe("application/zip");
    expect(res.headers["content-disposition"]).toBe('attachment; filename="Gallery.zip"');
    expect(res.headers["x-frame-options"]).toBe("SAMEORIGIN");
    const file = saveZip(res.rawPayload, "Gallery.zip");
    zipTest(file);
    const stamp = (u: FixtureUpload) => g.clock.iso().replace(/:/g, "-") + `_${u.id}`;
    const [a, b, v] = uploads as [FixtureUpload, FixtureUpload, FixtureUpload];
    expect(zipNames(file).sort()).toEqual(
      [`Alice_ the_first/${stamp(a)}.jpg`, `Bob/${stamp(b)}.jpg`, `Bob/${stamp(v)}.mp4`].sort(),
    );
    expect(zipEntry(file, `Alice_ the_first/${stamp(a)}.jpg`).equals(a.original)).toBe(true);
    expect(zipEntry(file, `Bob/${stamp(v)}.mp4`).equals(v.original)).toBe(true);
  });

  it("Memories.zip holds an offline index.html with captions, tags, names and comments, and the media", async () => {
    const res = await download(bob.token, "html");
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-disposition"]).toBe('attachment; filename="Memories.zip"');
    const file = saveZip(res.rawPayload, "Memories.zip");
    zipTest(file);
    const names = zipNames(file);
    const [a, b, v] = uploads as [FixtureUpload, FixtureUpload, FixtureUpload];
    expect(names).toContain("index.html");
    expect(names).toContain(`media/${a.id}.jpg`);
    expect(names).toContain(`media/${b.id}.jpg`);
    expect(names).toContain(`media/${v.id}.mp4`);
    expect(zipEntry(file, `media/${v.id}.mp4`).equals(v.original)).toBe(true);
    const html = zipEntry(file, "index.html").toString("utf8");
    expect(html).toContain("Sunset &lt;b&gt;over&lt;/b&gt; the lake");
    expect(html).toContain("#sunset");
    expect(html).toContain("Wow, so pretty!");
    expect(html).toContain("Alice: the/first");
    expect(html).toContain(`src="media/${v.id}.mp4"`.replace("src", "data-media"));
    // Works offline: no absolute URLs to fetch.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
  });

  it("download tickets are single use, expire after 60 s, are bound to their kind, and a day allows 3", async () => {
    const t = (await g.call("POST", "/export/ticket", { token: bob.token, body: { kind: "zip" } })).json();
    expect(Date.parse(t.expires_at) - g.clock.now()).toBe(60_000);
    expect((await g.call("GET", `/export/html/download?ticket=${t.ticket}`)).statusCode).toBe(401);
    // The wrong-kind attempt used it up.
    expect((await g.call("GET", `/export/zip/download?ticket=${t.ticket}`)).statusCode).toBe(401);
    expect((await g.call("GET", "/export/zip/download")).statusCode).toBe(401);

    const late = (await g.call("POST", "/export/ticket", { token: bob.token, body: { kind: "zip" } })).json();
    await g.clock.advance(61_000);
    const expired = await g.call("GET", `/export/zip/download?ticket=${late.ticket}`);
    expect(expired.statusCode).toBe(401);
    expect(expired.json().error.code).toBe("invalid_ticket");

    // Bob downloaded once above; two more are allowed today, then 429 with Retry-After.
    expect((await download(bob.token, "zip")).statusCode).toBe(200);
    expect((await download(bob.token, "html")).statusCode).toBe(200);
    const over = await g.call("POST", "/export/ticket", { token: bob.token, body: { kind: "zip" } });
    expect(over.statusCode).toBe(429);
    expect(Number(over.headers["retry-after"])).toBeGreaterThan(0);
  });

  it("a ticket dies with its session", async () => {
    const carol = await g.join("Carol");
    const t = (await g.call("POST", "/export/ticket", { token: carol.token, body: { kind: "zip" } })).json();
    expect((await g.call("DELETE", "/session", { token: carol.token })).statusCode).toBe(204);
    expect((await g.call("GET", `/export/zip/download?ticket=${t.ticket}`)).statusCode).toBe(401);
  });

  it("sends X-Frame-Options DENY everywhere but the export endpoints", async () => {
    expect((await g.built.app.inject({ url: "/healthz" })).headers["x-frame-options"]).toBe("DENY");
    expect((await g.call("GET", "/me/context", { token: alice.token })).headers["x-frame-options"]).toBe(
      "DENY",
    );
    expect((await g.call("GET", "/export/status", { token: alice.token })).headers["x-frame-options"]).toBe(
      "SAMEORIGIN",
    );
  });

  it("a removal after release makes the keepsake not current until the debounced rebuild", async () => {
    const before = (
      await g.call("POST", "/export/ticket", { token: alice.token, body: { kind: "zip" } })
    ).json();
    const removed = uploads[1]!;
    // A host takedown bumps the epoch in its own transaction and publishes upload-removed.
    expect((await g.call("DELETE", `/host/upload/${removed.id}`, { token: admin })).statusCode).toBe(204);

    const stale = (await g.call("GET", "/export/status", { token: alice.token })).json();
    expect(stale).toMatchObject({ released: true, epoch: 2, zip: { ready: false }, html: { ready: false } });
    const dl = await g.call("GET", `/export/zip/download?ticket=${before.ticket}`);
    expect(dl.statusCode).toBe(404);
    expect(
      (await g.call("POST", "/export/ticket", { token: alice.token, body: { kind: "zip" } })).statusCode,
    ).toBe(404);

    // A second removal within the window (a host comment removal) restarts the 20 s debounce.
    await g.clock.advance(15_000);
    const comment = await g.built.ctx.database.db
      .selectFrom("comments")
      .select("id")
      .executeTakeFirstOrThrow();
    expect((await g.call("DELETE", `/host/comment/${comment.id}`, { token: admin })).statusCode).toBe(204);
    await g.clock.advance(15_000);
    const jobs = await g.built.ctx.database.db.selectFrom("export_jobs").select(["kind", "epoch"]).execute();
    expect(jobs.every((j) => j.epoch === 1)).toBe(true);

    const ready = bothReady();
    await g.clock.advance(5_000);
    await ready;
    const fresh = (await g.call("GET", "/export/status", { token: alice.token })).json();
    expect(fresh).toMatchObject({ epoch: 3, zip: { ready: true }, html: { ready: true } });
    const res = await download(alice.token, "zip");
    expect(res.statusCode).toBe(200);
    const names = zipNames(saveZip(res.rawPayload, "Gallery2.zip"));
    expect(names).toHaveLength(2);
    expect(names.some((n) => n.includes(removed.id))).toBe(false);
    const memories = await download(alice.token, "html");
    const html = zipEntry(saveZip(memories.rawPayload, "Memories2.zip"), "index.html").toString("utf8");
    expect(html).not.toContain("Wow, so pretty!");
    expect(html).not.toContain("Dance floor");
    // The superseded archives were pruned; only the two current ones remain.
    expect(readdirSync(g.built.ctx.paths.exportsDir)).toHaveLength(2);
  });

  it("reopen withdraws the keepsake, bumps the epoch and tells clients", async () => {
    const t = (await g.call("POST", "/export/ticket", { token: admin, body: { kind: "html" } })).json();
    const n = published.length;
    const res = await g.call("POST", "/host/event/reopen", { token: admin });
    expect(res.statusCode).toBe(200);
    expect(res.json().event).toEqual({
      name: "Our Event",
      uploads_locked: false,
      released: false,
      keepsake_ready: false,
    });
    expect(published.slice(n).map((p) => p.event)).toEqual(["event-opened", "export-invalidated"]);
    expect((await g.call("GET", `/export/html/download?ticket=${t.ticket}`)).statusCode).toBe(404);
    const status = (await g.call("GET", "/export/status", { token: alice.token })).json();
    expect(status).toMatchObject({ released: false, epoch: 4, zip: { ready: false, status: "none" } });
    // The withdrawn archives are deleted from disk.
    expect(readdirSync(g.built.ctx.paths.exportsDir)).toEqual([]);
  });
});
