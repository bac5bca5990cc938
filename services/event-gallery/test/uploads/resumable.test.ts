import { readFile, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createTestEnv } from "@app/kit/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sweepExpiredResumables } from "../../src/uploads/resumable.js";
import { sweepLeftovers } from "../../src/uploads/sweep.js";
import { seedUpload } from "../core/harness.js";
import { type Gallery, mediaFiles, noiseJpeg, startGallery, uploadRow, userBytes } from "../media/helpers.js";
import { body, listen, offsetAfterCut, partialFiles, setLocked, sha, storedBytes, type Tus } from "./tus.js";

describe("tus resumable uploads", () => {
  let g: Gallery;
  let tus: Tus;
  let photo: Buffer;
  const disk = { free_bytes: 50e9, total_bytes: 100e9 };
  beforeAll(async () => {
    g = await startGallery({ deps: { disk: { stat: async () => ({ ...disk }) } } });
    tus = await listen(g);
    photo = await noiseJpeg(400, 300);
  });
  afterAll(async () => g.close());

  /** Create and return the Location. */
  async function create(
    token: string,
    key: string,
    length = photo.length,
    extra: Record<string, string> = {},
  ) {
    const res = await tus.create(token, length, { client_upload_id: key, ...extra });
    expect(res.status, await res.clone().text()).toBe(201);
    return res.headers.get("location") as string;
  }

  it("creates, answers OPTIONS, and finishes in chunks through the ingest path", async () => {
    const u = await g.join("Chunky");
    const opt = await fetch(`${tus.base}/api/v1/uploads`, { method: "OPTIONS" });
    expect(opt.status).toBe(204);
    expect(opt.headers.get("tus-extension")).toBe("creation,expiration,termination");
    expect(opt.headers.get("tus-max-size")).toBe("603979776");

    const res = await tus.create(u.token, photo.length, {
      client_upload_id: "k-1",
      caption: "  Dance floor  ",
      hashtags: "#Party, fun",
      filename: "IMG_1.jpg",
    });
    expect(res.status).toBe(201);
    const loc = res.headers.get("location") as string;
    expect(loc).toMatch(/^\/api\/v1\/uploads\/[0-9a-f]{32}$/);
    expect(res.headers.get("tus-resumable")).toBe("1.0.0");
    expect(new Date(res.headers.get("upload-expires") as string).getTime()).toBe(
      g.clock.now() + 24 * 3_600_000 - (g.clock.now() % 1000),
    );

    const chunk = 100_000;
    let offset = 0;
    let last: Response | null = null;
    while (offset < photo.length) {
      last = await tus.patch(u.token, loc, offset, photo.subarray(offset, offset + chunk));
      offset = Number(last.headers.get("upload-offset"));
      if (offset < photo.length) expect(last.status).toBe(204);
    }
    expect(last?.status).toBe(201);
    const up = (await body(last as Response)).upload;
    expect(up).toMatchObject({ caption: "Dance floor", hashtags: ["fun", "party"], mime_type: "image/jpeg" });
    const row = await uploadRow(g, up.id);
    expect(row.client_upload_id).toBe("k-1");
    expect(row.original_size_bytes).toBe(photo.length);
    expect(sha(await readFile(join(g.built.ctx.paths.mediaDir, row.original_path as string)))).toBe(
      sha(photo),
    );
    expect(await userBytes(g, u.id)).toBe(photo.length);
    expect(await partialFiles(g)).toEqual([]);

    // The finished key replays: HEAD shows it complete, a creation with the key answers 200.
    const head = await tus.head(u.token, loc);
    expect(head.headers.get("upload-offset")).toBe(String(photo.length));
    const again = await tus.create(u.token, photo.length, { client_upload_id: "k-1" });
    expect(again.status).toBe(200);
    expect((await body(again)).upload.id).toBe(up.id);
    expect(again.headers.get("location")).toBe(loc);
    const replay = await tus.patch(u.token, loc, photo.length, new Uint8Array());
    expect(replay.status).toBe(200);
    expect(await userBytes(g, u.id)).toBe(photo.length);
  });

  it("resumes from the last byte it stored after cuts at several offsets", async () => {
    const u = await g.join("Cutter");
    const loc = await create(u.token, "cut-1");
    for (const cutAt of [1, 4099, Math.floor(photo.length / 2), photo.length - 7]) {
      const at = Number((await tus.head(u.token, loc)).headers.get("upload-offset"));
      await tus.cutPatch(u.token, loc, at, photo.subarray(at), cutAt - at, async () => {
        return (await storedBytes(g, loc)) >= cutAt;
      });
      const after = await offsetAfterCut(tus, u.token, loc, at);
      expect(after).toBeGreaterThan(at);
      expect(after).toBeLessThanOrEqual(cutAt);
    }
    const at = Number((await tus.head(u.token, loc)).headers.get("upload-offset"));
    // The wrong offset is refused with the real one, as tus says.
    const wrong = await tus.patch(u.token, loc, 0, photo.subarray(0, 10));
    expect(wrong.status).toBe(409);
    expect(wrong.headers.get("upload-offset")).toBe(String(at));
    const done = await tus.patch(u.token, loc, at, photo.subarray(at));
    expect(done.status).toBe(201);
    const row = await uploadRow(g, (await body(done)).upload.id);
    expect(sha(await readFile(join(g.built.ctx.paths.mediaDir, row.original_path as string)))).toBe(
      sha(photo),
    );
  });

  it("gives a retried creation the same upload, and another user nothing", async () => {
    const u = await g.join("Twice");
    const other = await g.join("Snoop");
    const loc = await create(u.token, "dup-1");
    await tus.patch(u.token, loc, 0, photo.subarray(0, 5000));
    const again = await tus.create(u.token, photo.length, { client_upload_id: "dup-1" });
    expect(again.status).toBe(201);
    expect(again.headers.get("location")).toBe(loc);
    expect(again.headers.get("upload-offset")).toBe("5000");
    expect((await tus.head(other.token, loc)).status).toBe(404);
    expect((await tus.patch(other.token, loc, 5000, photo.subarray(5000, 6000))).status).toBe(404);
    const del = await fetch(`${tus.base}${loc}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${other.token}`, "tus-resumable": "1.0.0" },
    });
    expect(del.status).toBe(404);
    // The owner terminates: bytes and key are gone.
    const before = (await partialFiles(g)).length;
    const mine = await fetch(`${tus.base}${loc}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${u.token}`, "tus-resumable": "1.0.0" },
    });
    expect(mine.status).toBe(204);
    expect((await partialFiles(g)).length).toBe(before - 1);
    expect((await tus.head(u.token, loc)).status).toBe(404);
  });

  it("refuses chunks while locked and keeps the bytes; a commit refused by the lock is retried later", async () => {
    const u = await g.join("Locky");
    const loc = await create(u.token, "lock-1");
    await tus.patch(u.token, loc, 0, photo.subarray(0, 50_000));
    await setLocked(g, true);
    const between = await tus.patch(u.token, loc, 50_000, photo.subarray(50_000, 60_000));
    expect(between.status).toBe(403);
    expect((await body(between)).error.code).toBe("uploads_locked");
    expect((await tus.create(u.token, photo.length, { client_upload_id: "lock-2" })).status).toBe(403);
    await setLocked(g, false);
    expect((await tus.patch(u.token, loc, 50_000, photo.subarray(50_000, photo.length - 10))).status).toBe(
      204,
    );

    // Locked between the last chunk's bytes and its commit: the commit's own check refuses.
    await setLocked(g, true);
    const lockedLast = await tus.patch(u.token, loc, photo.length - 10, photo.subarray(photo.length - 10));
    expect(lockedLast.status).toBe(403);
    await setLocked(g, false);
    expect((await tus.head(u.token, loc)).headers.get("upload-offset")).toBe(String(photo.length - 10));
    const done = await tus.patch(u.token, loc, photo.length - 10, photo.subarray(photo.length - 10));
    expect(done.status).toBe(201);
  });

  it("keeps complete bytes when the lock refuses the commit itself, and commits on an empty PATCH", async () => {
    const u = await g.join("Lastly");
    const loc = await create(u.token, "lock-3");
    await tus.patch(u.token, loc, 0, photo.subarray(0, photo.length - 1));
    // The lock lands while the last byte travels: simulate by locking inside the commit window.
    const { db } = g.built.ctx.database;
    const orig = g.built.ctx.settings.all.bind(g.built.ctx.settings);
    g.built.ctx.settings.all = async () => {
      await setLocked(g, true);
      return orig();
    };
    const last = await tus.patch(u.token, loc, photo.length - 1, photo.subarray(photo.length - 1));
    g.built.ctx.settings.all = orig;
    expect(last.status).toBe(403);
    expect((await body(last)).error.code).toBe("uploads_locked");
    expect(
      await db.selectFrom("uploads").select("id").where("client_upload_id", "=", "lock-3").execute(),
    ).toEqual([]);
    await setLocked(g, false);
    expect((await tus.head(u.token, loc)).headers.get("upload-offset")).toBe(String(photo.length));
    const commit = await tus.patch(u.token, loc, photo.length, new Uint8Array());
    expect(commit.status).toBe(201);
    expect(await userBytes(g, u.id)).toBe(photo.length);
  });

  it("checks the quota from the declared length at creation and again at commit", async () => {
    const u = await g.join("Quota");
    disk.free_bytes = 10 * photo.length;
    try {
      // Ceiling = free × 0.8 / active uploaders.
      const big = await tus.create(u.token, 100 * photo.length, { client_upload_id: "q-1" });
      expect(big.status).toBe(413);
      expect((await body(big)).error.code).toBe("quota_exceeded");
      const loc = await create(u.token, "q-2");
      await tus.patch(u.token, loc, 0, photo.subarray(0, 1000));
      // Meanwhile the disk filled up: the commit re-checks with the real size.
      disk.free_bytes = photo.length / 2;
      const last = await tus.patch(u.token, loc, 1000, photo.subarray(1000));
      expect(last.status).toBe(413);
      expect((await body(last)).error.code).toBe("quota_exceeded");
      expect((await tus.head(u.token, loc)).status).toBe(404);
      expect(await userBytes(g, u.id)).toBe(0);
    } finally {
      disk.free_bytes = 50e9;
    }
    const tooBig = await tus.create(u.token, 603979777, { client_upload_id: "q-3" });
    expect(tooBig.status).toBe(413);
    expect((await body(tooBig)).error.code).toBe("payload_too_large");
  });

  it("refuses a host-removed key and an unsupported type (removing its bytes)", async () => {
    const u = await g.join("Typey");
    const loc = await create(u.token, "t-1", 5000);
    const text = Buffer.alloc(5000, "not a photo ");
    const res = await tus.patch(u.token, loc, 0, text);
    expect(res.status).toBe(415);
    expect((await tus.head(u.token, loc)).status).toBe(404);
    const id = await seedUpload(g, u.id);
    await g.built.ctx.database.db
      .updateTable("uploads")
      .set({ client_upload_id: "t-2", deleted_at: g.clock.iso(), deleted_by: "host" })
      .where("id", "=", id)
      .execute();
    const removed = await tus.create(u.token, 10, { client_upload_id: "t-2" });
    expect(removed.status).toBe(409);
    expect((await body(removed)).error.code).toBe("removed_by_host");
  });

  it("answers malformed tus requests with the common error shape", async () => {
    const u = await g.join("Badly");
    const h = { authorization: `Bearer ${u.token}`, "tus-resumable": "1.0.0" };
    const post = (headers: Record<string, string>) =>
      fetch(`${tus.base}/api/v1/uploads`, { method: "POST", headers: { ...h, ...headers } });
    const cases: [Response, number, string][] = [
      [
        await post({ "upload-length": "-1", "upload-metadata": "client_upload_id YQ==" }),
        400,
        "invalid_body",
      ],
      [await post({ "upload-metadata": "client_upload_id YQ==" }), 400, "invalid_body"],
      [await post({ "upload-length": "10", "upload-metadata": "client_upload_id !!!" }), 400, "invalid_body"],
      [await post({ "upload-length": "10", "upload-metadata": "a YQ==,a YQ==" }), 400, "invalid_body"],
      [await post({ "upload-length": "10" }), 400, "invalid_body"],
      [
        await fetch(`${tus.base}/api/v1/uploads`, {
          method: "POST",
          headers: { authorization: h.authorization, "upload-length": "10" },
        }),
        412,
        "tus_version",
      ],
    ];
    const loc = await create(u.token, "bad-1", 100);
    cases.push([
      await fetch(`${tus.base}${loc}`, {
        method: "PATCH",
        headers: { ...h, "upload-offset": "0", "content-type": "application/json" },
        body: "{}",
      }),
      415,
      "unsupported_media_type",
    ]);
    cases.push([
      await fetch(`${tus.base}${loc}`, {
        method: "PATCH",
        headers: { ...h, "upload-offset": "x", "content-type": "application/offset+octet-stream" },
        body: "abc",
      }),
      400,
      "invalid_body",
    ]);
    cases.push([await tus.patch(u.token, loc, 0, new Uint8Array(101)), 400, "invalid_body"]);
    for (const [res, status, code] of cases) {
      expect(res.status).toBe(status);
      expect((await body(res)).error.code).toBe(code);
    }
  });

  it("sweeps stale temp files and orphan partials at start-up, keeping live ones", async () => {
    const media = g.built.ctx.paths.mediaDir;
    const stale = join(media, "originals", ".tmp-deadbeef00000000");
    const fresh = join(media, "originals", ".tmp-freshfreshfresh0");
    const orphan = join(g.dataDir, "partials", "0123456789abcdef0123456789abcdef");
    await writeFile(stale, "x".repeat(100));
    await writeFile(fresh, "x");
    await writeFile(orphan, "x");
    const old = new Date(g.clock.now() - 3600_000);
    await utimes(stale, old, old);
    await utimes(orphan, old, old);
    await utimes(fresh, new Date(g.clock.now()), new Date(g.clock.now()));
    const u = await g.join("Alive");
    const live = (await create(u.token, "live-1")).split("/").pop() as string;
    const livePath = join(g.dataDir, "partials", live);
    await utimes(livePath, old, old);
    const counted = await sweepLeftovers(g.built.ctx);
    expect(counted).toEqual({ temp_files: 1, partials: 1 });
    expect(await mediaFiles(g)).toContain("originals/.tmp-freshfreshfresh0");
    expect(await mediaFiles(g)).not.toContain("originals/.tmp-deadbeef00000000");
    expect(await partialFiles(g)).toContain(live);
    expect(await partialFiles(g)).not.toContain("0123456789abcdef0123456789abcdef");
  });
});

describe("tus expiry", () => {
  it("removes unfinished uploads with their bytes after GALLERY_RESUMABLE_TTL_HOURS", async () => {
    // 0.01 h = 36 s, so the fake clock need not run a day of other workers' timers.
    const g = await startGallery({ env: { GALLERY_RESUMABLE_TTL_HOURS: "0.01" } });
    try {
      const tus = await listen(g);
      const u = await g.join("Slow");
      const res = await tus.create(u.token, 5000, { client_upload_id: "exp-1" });
      const loc = res.headers.get("location") as string;
      expect(new Date(res.headers.get("upload-expires") as string).getTime()).toBeGreaterThan(
        g.clock.now() + 35_000,
      );
      await tus.patch(u.token, loc, 0, Buffer.alloc(1000));
      const key = loc.split("/").pop() as string;
      expect(await partialFiles(g)).toContain(key);
      await g.clock.advance(35_000);
      expect((await tus.head(u.token, loc)).status).toBe(200);
      expect(await sweepExpiredResumables(g.built.ctx)).toBe(0);
      await g.clock.advance(1_000);
      expect((await tus.head(u.token, loc)).status).toBe(404);
      expect(await sweepExpiredResumables(g.built.ctx)).toBe(1);
      expect(await partialFiles(g)).not.toContain(key);
      // The key is free again.
      expect((await tus.create(u.token, 10, { client_upload_id: "exp-1" })).status).toBe(201);
    } finally {
      await g.close();
    }
  });

  it("runs the sweep in the background worker and says how much it removed", async () => {
    const g = await startGallery({ env: { GALLERY_RESUMABLE_TTL_HOURS: "0.01" } });
    try {
      const tus = await listen(g);
      const u = await g.join("Gone");
      const loc = (await tus.create(u.token, 5000, { client_upload_id: "w-1" })).headers.get(
        "location",
      ) as string;
      await g.clock.advance(5 * 60_000);
      await expect.poll(() => partialFiles(g)).toEqual([]);
      expect((await tus.head(u.token, loc)).status).toBe(404);
      expect(g.logs.text()).toMatch(/"expired":1,"msg":"expired resumable uploads removed"/);
    } finally {
      await g.close();
    }
  });
});

describe("tus across a server restart", () => {
  it("resumes an upload cut before the restart from the stored offset", async () => {
    const env = await createTestEnv("gallery_tus");
    const photo = await noiseJpeg(300, 200);
    let g = await startGallery({ keepEnv: env });
    let tus = await listen(g);
    const u = await g.join("Restart");
    const res = await tus.create(u.token, photo.length, { client_upload_id: "r-1" });
    const loc = res.headers.get("location") as string;
    await tus.cutPatch(u.token, loc, 0, photo, 20_000, async () => (await storedBytes(g, loc)) >= 20_000);
    expect(await offsetAfterCut(tus, u.token, loc, 0)).toBeGreaterThan(0);
    await g.close();
    g = await startGallery({ keepEnv: env });
    try {
      tus = await listen(g);
      const head = await tus.head(u.token, loc);
      expect(head.status).toBe(200);
      const at = Number(head.headers.get("upload-offset"));
      expect(at).toBeGreaterThan(0);
      const again = await tus.create(u.token, photo.length, { client_upload_id: "r-1" });
      expect(again.headers.get("location")).toBe(loc);
      const done = await tus.patch(u.token, loc, at, photo.subarray(at));
      expect(done.status).toBe(201);
      const row = await uploadRow(g, (await body(done)).upload.id);
      expect(sha(await readFile(join(g.built.ctx.paths.mediaDir, row.original_path as string)))).toBe(
        sha(photo),
      );
    } finally {
      await g.close();
      await env.cleanup();
    }
  });
});
