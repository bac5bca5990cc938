import { request } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type Gallery,
  mediaFiles,
  multipart,
  noiseJpeg,
  setSettings,
  solidJpeg,
  solidPng,
  startGallery,
  testMp4,
  upload,
  uploadRow,
  userBytes,
} from "./helpers.js";

describe("POST /upload", () => {
  let g: Gallery;
  let jpeg: Buffer;
  beforeAll(async () => {
    g = await startGallery();
    jpeg = await solidJpeg();
  });
  afterAll(async () => g.close());

  it("stores a sniffed JPEG and answers 201 with the contract's upload shape", async () => {
    const u = await g.join("Ada");
    const events: [string, Record<string, unknown>][] = [];
    const off = g.built.ctx.bus.subscribe((e, d) => events.push([e, d]));
    const res = await upload(
      g,
      u.token,
      jpeg,
      [
        ["caption", "  Cake time  "],
        ["hashtags", "#Cake, party  fun"],
        ["hashtags", "cake"],
      ],
      "text/plain",
    );
    expect(res.statusCode).toBe(201);
    const up = res.json().upload;
    expect(up).toEqual({
      id: expect.any(String),
      uploader: { id: u.id, display_name: "Ada" },
      caption: "Cake time",
      hashtags: ["cake", "fun", "party"],
      media_type: "image",
      mime_type: "image/jpeg",
      created_at: g.clock.iso(),
      updated_at: g.clock.iso(),
      like_count: 0,
      comment_count: 0,
      liked_by_me: false,
      favorited_by_me: false,
      highlight: false,
      compression_status: "processing",
      approval: "approved",
      width: null,
      height: null,
      duration_s: null,
      original_url: expect.stringMatching(new RegExp(`^/api/v1/upload/${up.id}/original\\?t=.+`)),
      preview_url: null,
      display_url: null,
      thumbnail_url: null,
    });
    off();
    expect(events).toEqual([["new-upload", { id: up.id, user_id: u.id }]]);
    const row = await uploadRow(g, up.id);
    expect(row.original_size_bytes).toBe(jpeg.length);
    expect(await userBytes(g, u.id)).toBe(jpeg.length);
    expect(await mediaFiles(g)).toEqual([`originals/${up.id}.jpg`]);
    // The original URL works straight from an <img> tag (media token, no header).
    const media = await g.built.app.inject({ method: "GET", url: up.original_url });
    expect(media.statusCode).toBe(200);
    expect(media.rawPayload.equals(jpeg)).toBe(true);
  });

  it("recognises PNG and MP4 from their bytes, whatever the client claims", async () => {
    const u = await g.join("Bea");
    const png = await upload(g, u.token, await solidPng(), [], "image/jpeg");
    expect(png.statusCode).toBe(201);
    expect(png.json().upload).toMatchObject({ media_type: "image", mime_type: "image/png" });
    const mp4 = await upload(g, u.token, await testMp4(), [], "image/png");
    expect(mp4.statusCode).toBe(201);
    expect(mp4.json().upload).toMatchObject({ media_type: "video", mime_type: "video/mp4" });
  });

  it("refuses other content with 415 and leaves nothing behind", async () => {
    const u = await g.join("Cid");
    const before = await mediaFiles(g);
    const text = Buffer.from("<html><body>not an image at all</body></html>".repeat(200));
    const res = await upload(g, u.token, text, [], "image/jpeg");
    expect(res.statusCode).toBe(415);
    expect(res.json().error.code).toBe("unsupported_media_type");
    const json = await g.call("POST", "/upload", { token: u.token, body: { file: "x" } });
    expect(json.statusCode).toBe(415);
    expect(json.json().error.code).toBe("unsupported_media_type");
    const pdf = await upload(
      g,
      u.token,
      Buffer.from("%PDF-1.4\n%âãÏÓ\n1 0 obj\n<<>>\nendobj\n"),
      [],
      "image/png",
    );
    expect(pdf.statusCode).toBe(415);
    expect(await mediaFiles(g)).toEqual(before);
    expect(await userBytes(g, u.id)).toBe(0);
  });

  it("validates hashtags and caption with 422 and stores nothing", async () => {
    const u = await g.join("Dan");
    const cases: [string, string][][] = [
      [["hashtags", "ok, bad-tag"]],
      [["hashtags", "x".repeat(51)]],
      [["hashtags", Array.from({ length: 31 }, (_, i) => `t${i}`).join(" ")]],
      [["hashtags", "café"]],
      [["caption", "c".repeat(2001)]],
      [["caption", "é".repeat(4000)]],
      [["nickname", "x"]],
    ];
    for (const fields of cases) {
      const res = await upload(g, u.token, jpeg, fields);
      expect(res.statusCode, `${JSON.stringify(fields).slice(0, 80)} ${res.body}`).toBe(422);
      expect(res.json().error.code).toBe("validation_failed");
    }
    // 30 tags of 50 characters are fine.
    const ok = await upload(g, u.token, jpeg, [
      [
        "hashtags",
        Array.from({ length: 30 }, (_, i) => `${String(i).padStart(2, "0")}${"a".repeat(48)}`).join(","),
      ],
    ]);
    expect(ok.statusCode).toBe(201);
    expect(ok.json().upload.hashtags).toHaveLength(30);
    const fieldsOnly = await multipart([["caption", "x"]]);
    const noFile = await g.built.app.inject({
      method: "POST",
      url: "/api/v1/upload",
      headers: { ...fieldsOnly.headers, authorization: `Bearer ${u.token}` },
      payload: fieldsOnly.payload,
    });
    expect(noFile.statusCode).toBe(422);
    expect(noFile.json().error.field).toBe("file");
    const rows = await g.built.ctx.database.db
      .selectFrom("uploads")
      .select("id")
      .where("user_id", "=", u.id)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it("needs a session and refuses a banned guest with 403 banned", async () => {
    const anon = await g.built.app.inject({
      method: "POST",
      url: "/api/v1/upload",
      ...(await multipart([], { data: jpeg })),
    });
    expect(anon.statusCode).toBe(401);
    const u = await g.join("Eve");
    await g.built.ctx.database.db.updateTable("users").set({ is_banned: 1 }).where("id", "=", u.id).execute();
    const res = await upload(g, u.token, jpeg);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe("banned");
  });

  it("replays a repeated key as 200 from live state, without a second row or charge", async () => {
    const u = await g.join("Fay");
    const first = await upload(g, u.token, jpeg, [
      ["client_upload_id", "k-1"],
      ["caption", "first"],
    ]);
    expect(first.statusCode).toBe(201);
    const id = first.json().upload.id;
    await g.built.ctx.database.db
      .updateTable("uploads")
      .set({ caption: "edited" })
      .where("id", "=", id)
      .execute();
    const again = await upload(g, u.token, jpeg, [
      ["client_upload_id", "k-1"],
      ["caption", "second"],
    ]);
    expect(again.statusCode).toBe(200);
    expect(again.json().upload).toMatchObject({ id, caption: "edited" });
    const rows = await g.built.ctx.database.db
      .selectFrom("uploads")
      .select("id")
      .where("user_id", "=", u.id)
      .execute();
    expect(rows).toHaveLength(1);
    expect(await userBytes(g, u.id)).toBe(jpeg.length);
    // Another user may use the same key.
    const other = await g.join("Gus");
    expect((await upload(g, other.token, jpeg, [["client_upload_id", "k-1"]])).statusCode).toBe(201);
  });

  it("concurrent retries with one key: one row, the loser replays the winner", async () => {
    const u = await g.join("Hal");
    const before = await mediaFiles(g);
    const results = await Promise.all(
      Array.from({ length: 4 }, () => upload(g, u.token, jpeg, [["client_upload_id", "same"]])),
    );
    const codes = results.map((r) => r.statusCode).sort();
    expect(codes).toEqual([200, 200, 200, 201]);
    const ids = new Set(results.map((r) => r.json().upload.id));
    expect(ids.size).toBe(1);
    expect(await userBytes(g, u.id)).toBe(jpeg.length);
    const after = await mediaFiles(g);
    expect(after.length - before.length).toBe(1);
  });

  it("a key after a host takedown is 409 removed_by_host; after the guest's own delete it is free", async () => {
    const u = await g.join("Ivy");
    const a = await upload(g, u.token, jpeg, [["client_upload_id", "taken-down"]]);
    // A host takedown (moderation's route) soft-deletes with deleted_by = 'host'.
    await g.built.ctx.database.db
      .updateTable("uploads")
      .set({ deleted_at: g.clock.iso(), deleted_by: "host" })
      .where("id", "=", a.json().upload.id)
      .execute();
    const again = await upload(g, u.token, jpeg, [["client_upload_id", "taken-down"]]);
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe("removed_by_host");

    const b = await upload(g, u.token, jpeg, [["client_upload_id", "mine"]]);
    expect((await g.call("DELETE", `/upload/${b.json().upload.id}`, { token: u.token })).statusCode).toBe(
      204,
    );
    const fresh = await upload(g, u.token, jpeg, [["client_upload_id", "mine"]]);
    expect(fresh.statusCode).toBe(201);
    expect(fresh.json().upload.id).not.toBe(b.json().upload.id);
  });

  it("refuses while uploads are locked (403 uploads_locked), leaving nothing", async () => {
    const u = await g.join("Jon");
    const { db } = g.built.ctx.database;
    await db.updateTable("event").set({ uploads_locked_at: g.clock.iso() }).where("id", "=", 1).execute();
    try {
      const before = await mediaFiles(g);
      const res = await upload(g, u.token, jpeg);
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe("uploads_locked");
      expect(await mediaFiles(g)).toEqual(before);
    } finally {
      await db.updateTable("event").set({ uploads_locked_at: null }).where("id", "=", 1).execute();
    }
    expect((await upload(g, u.token, jpeg)).statusCode).toBe(201);
  });

  it("a lock that lands while the file streams is caught at commit: no row, no file, no charge", async () => {
    const u = await g.join("Kim");
    const before = await mediaFiles(g);
    const { db } = g.built.ctx.database;
    // The lock arrives after the pre-stream check: simulate it by locking on the first disk probe.
    // The probe object is the one the upload modules were built with; its method is swapped.
    const { disk } = g.built.ctx;
    const stat = disk.stat;
    disk.stat = async () => {
      await db.updateTable("event").set({ uploads_locked_at: g.clock.iso() }).where("id", "=", 1).execute();
      return stat.call(disk);
    };
    try {
      const res = await upload(g, u.token, jpeg);
      expect(res.statusCode).toBe(403);
      expect(res.json().error.code).toBe("uploads_locked");
    } finally {
      disk.stat = stat;
      await db.updateTable("event").set({ uploads_locked_at: null }).where("id", "=", 1).execute();
    }
    expect(await mediaFiles(g)).toEqual(before);
    expect(await userBytes(g, u.id)).toBe(0);
  });

  it("enforces the quota floor(free * tolerance / active uploaders) with 413 quota_exceeded", async () => {
    const q = await startGallery({
      deps: { disk: { stat: async () => ({ free_bytes: 10_000, total_bytes: 1e9 }) } },
    });
    try {
      await setSettings(q, { quota_tolerance: 0.5 });
      const small = await solidJpeg(8, 8);
      expect(small.length).toBeLessThan(2_500);
      const a = await q.join("Ann");
      // Alone: ceiling 5000.
      expect((await upload(q, a.token, small)).statusCode).toBe(201);
      const b = await q.join("Ben");
      expect((await upload(q, b.token, small)).statusCode).toBe(201);
      // Two active uploaders: ceiling 2500 each; Ann already used small.length.
      const big = await noiseJpeg(50, 50);
      expect(small.length + big.length).toBeGreaterThan(2_500);
      const before = await mediaFiles(q);
      const res = await upload(q, a.token, big);
      expect(res.statusCode).toBe(413);
      expect(res.json().error).toMatchObject({ code: "quota_exceeded", limit: 2_500 });
      expect(await userBytes(q, a.id)).toBe(small.length);
      expect(await mediaFiles(q)).toEqual(before);
    } finally {
      await q.close();
    }
  });

  it("refuses a file over max_upload_bytes (413, file.truncated) and rate-limits per hour (429)", async () => {
    const u = await g.join("Lea");
    await setSettings(g, { max_upload_bytes: 1_000 });
    try {
      const before = await mediaFiles(g);
      const big = await noiseJpeg(60, 60);
      expect(big.length).toBeGreaterThan(1_000);
      const res = await upload(g, u.token, big);
      expect(res.statusCode).toBe(413);
      expect(res.json().error.code).toBe("payload_too_large");
      expect(await mediaFiles(g)).toEqual(before);
      // A declared Content-Length that cannot fit is refused before the body is read.
      const hugeFile = await noiseJpeg(1200, 1200);
      expect(hugeFile.length).toBeGreaterThan(1_000_000);
      const huge = await upload(g, u.token, hugeFile);
      expect(huge.statusCode).toBe(413);
      expect(huge.json().error).toMatchObject({ code: "payload_too_large", limit: 1_000 });
      expect(await mediaFiles(g)).toEqual(before);
      expect(await userBytes(g, u.id)).toBe(0);
    } finally {
      await setSettings(g, { max_upload_bytes: 603979776 });
    }
    const r = await g.join("Rae");
    await setSettings(g, { upload_rate_per_hour: 2 });
    try {
      expect((await upload(g, r.token, jpeg)).statusCode).toBe(201);
      expect((await upload(g, r.token, jpeg)).statusCode).toBe(201);
      const limited = await upload(g, r.token, jpeg);
      expect(limited.statusCode).toBe(429);
      expect(Number(limited.headers["retry-after"])).toBeGreaterThan(0);
    } finally {
      await setSettings(g, { upload_rate_per_hour: 100 });
    }
  });

  it("an upload aborted mid-stream leaves no file, row or charge", async () => {
    const u = await g.join("Max");
    const before = await mediaFiles(g);
    await g.built.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = g.built.app.server.address() as AddressInfo;
    const body = await multipart([["caption", "never"]], {
      data: Buffer.concat([jpeg, Buffer.alloc(2_000_000)]),
    });
    const cut = body.payload.subarray(0, 1_000_000);
    const tempFiles = async () => (await mediaFiles(g)).filter((f) => f.includes(".tmp-"));
    const req = request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/api/v1/upload",
      headers: { ...body.headers, authorization: `Bearer ${u.token}`, "content-length": body.payload.length },
    });
    req.on("error", () => {});
    req.write(cut);
    // The server is mid-stream (its temp file exists) when the client goes away.
    await expect.poll(async () => (await tempFiles()).length).toBe(1);
    req.destroy();
    await expect.poll(async () => (await tempFiles()).length).toBe(0);
    expect(await mediaFiles(g)).toEqual(before);
    const rows = await g.built.ctx.database.db
      .selectFrom("uploads")
      .select("id")
      .where("user_id", "=", u.id)
      .execute();
    expect(rows).toHaveLength(0);
    expect(await userBytes(g, u.id)).toBe(0);
  });
});
