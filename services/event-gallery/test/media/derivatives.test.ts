import { access, chmod, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DERIVATIVES_REV } from "../../src/derivatives/pipeline.js";
import { resolveMediaPath } from "../../src/uploads/storage.js";
import { makeHeic } from "./heic.js";
import {
  type Gallery,
  rotatedJpeg,
  solidJpeg,
  solidPng,
  startGallery,
  testMp4,
  upload,
  uploadRow,
  userBytes,
  worker,
} from "./helpers.js";

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

describe("derivatives worker", () => {
  let g: Gallery;
  let guest: { token: string; id: string };
  const abs = (rel: string | null) => resolveMediaPath(g.built.ctx.paths.mediaDir, rel ?? "missing");

  beforeAll(async () => {
    g = await startGallery();
    guest = await g.join("Photographer");
  });
  afterAll(async () => g.close());

  async function uploaded(file: Buffer): Promise<string> {
    const res = await upload(g, guest.token, file);
    expect(res.statusCode).toBe(201);
    return res.json().upload.id;
  }

  it("orients by EXIF: one decode feeds display, preview and thumbnail; sizes stored after rotation", async () => {
    const id = await uploaded(await rotatedJpeg());
    expect(await worker(g).processPending()).toBeGreaterThanOrEqual(1);
    const row = await uploadRow(g, id);
    expect(row).toMatchObject({
      compression_status: "done",
      width: 200,
      height: 300,
      derivative_attempts: 0,
      derivatives_rev: DERIVATIVES_REV,
    });
    for (const p of [row.display_path, row.preview_path, row.thumbnail_path]) {
      const meta = await sharp(abs(p)).metadata();
      expect(meta.format).toBe("jpeg");
      // Upright pixels: no orientation tag left to apply, and never enlarged.
      expect([meta.width, meta.height, meta.orientation ?? 1]).toEqual([200, 300, 1]);
    }
    // Red (the stored left half) is on top after rotating 90° clockwise.
    const { data, info } = await sharp(abs(row.display_path)).raw().toBuffer({ resolveWithObject: true });
    const px = (x: number, y: number) =>
      Array.from(data.subarray((y * info.width + x) * 3, (y * info.width + x) * 3 + 3));
    const [tr, , tb] = px(100, 20);
    const [br, , bb] = px(100, 280);
    expect(tr).toBeGreaterThan(200);
    expect(tb).toBeLessThan(60);
    expect(bb).toBeGreaterThan(200);
    expect(br).toBeLessThan(60);
    // The feed item now has every derivative URL and the oriented size.
    const item = (await g.call("GET", "/feed", { token: guest.token }))
      .json()
      .items.find((i: { id: string }) => i.id === id);
    expect(item).toMatchObject({ width: 200, height: 300, compression_status: "done" });
    expect(item.preview_url).toMatch(`/api/v1/upload/${id}/preview?t=`);
    expect(item.display_url).toMatch(`/api/v1/upload/${id}/display?t=`);
    expect(item.thumbnail_url).toMatch(`/api/v1/upload/${id}/thumbnail?t=`);
  });

  it("scales to 2048 / 800 / 400 on the long edge and flattens transparency", async () => {
    const id = await uploaded(await solidJpeg(3000, 1000));
    const pngId = await uploaded(await solidPng(900, 600));
    await worker(g).processPending();
    const row = await uploadRow(g, id);
    expect([row.width, row.height]).toEqual([3000, 1000]);
    const size = async (p: string | null) => {
      const m = await sharp(abs(p)).metadata();
      return [m.width, m.height];
    };
    expect(await size(row.display_path)).toEqual([2048, 683]);
    expect(await size(row.preview_path)).toEqual([800, 267]);
    expect(await size(row.thumbnail_path)).toEqual([400, 133]);
    const png = await uploadRow(g, pngId);
    expect(await size(png.display_path)).toEqual([900, 600]);
    expect(await size(png.preview_path)).toEqual([800, 533]);
    expect((await sharp(abs(png.thumbnail_path)).metadata()).channels).toBe(3);
  });

  it("decodes HEIC with the WASM decoder when sharp's prebuilt cannot (no HEVC)", async () => {
    const heic = await makeHeic(64, 48);
    await expect(sharp(heic).toBuffer()).rejects.toThrow();
    const res = await upload(g, guest.token, heic, [], "image/jpeg");
    expect(res.json().upload).toMatchObject({ media_type: "image", mime_type: "image/heic" });
    const id = res.json().upload.id;
    await worker(g).processPending();
    const row = await uploadRow(g, id);
    expect(row).toMatchObject({ compression_status: "done", width: 64, height: 48 });
    const meta = await sharp(abs(row.display_path)).metadata();
    expect([meta.format, meta.width, meta.height]).toEqual(["jpeg", 64, 48]);
    expect(row.original_path).toMatch(/\.heic$/);
  });

  it("a video gets one JPEG frame as thumbnail, its size and duration, and nothing else", async () => {
    const id = await uploaded(await testMp4());
    const events: string[] = [];
    const off = g.built.ctx.bus.subscribe((e, d) => {
      if (d.id === id) events.push(e);
    });
    await worker(g).processPending();
    off();
    const row = await uploadRow(g, id);
    expect(row).toMatchObject({
      compression_status: "done",
      width: 320,
      height: 240,
      preview_path: null,
      display_path: null,
    });
    expect(row.duration_s).toBeCloseTo(1, 1);
    const thumb = await sharp(abs(row.thumbnail_path)).metadata();
    expect([thumb.format, thumb.width, thumb.height]).toEqual(["jpeg", 320, 240]);
    expect(events).toEqual(["upload-processed"]);
  });

  it("three failed attempts: failed, soft-deleted by the system, quota refunded, original kept", async () => {
    const broken = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(5000, 7)]);
    const before = await userBytes(g, guest.id);
    const id = await uploaded(broken);
    expect(await userBytes(g, guest.id)).toBe(before + broken.length);
    const removed: string[] = [];
    const off = g.built.ctx.bus.subscribe((e, d) => {
      if (e === "upload-removed") removed.push(String(d.id));
    });
    await worker(g).processPending();
    off();
    const row = await uploadRow(g, id);
    expect(row).toMatchObject({
      compression_status: "failed",
      deleted_by: "system",
      derivative_attempts: 3,
      thumbnail_path: null,
    });
    expect(row.deleted_at).toBe(g.clock.iso());
    expect(row.derivative_last_error).toBeTruthy();
    expect(row.derivative_last_error).not.toContain(g.built.ctx.paths.mediaDir);
    expect(await userBytes(g, guest.id)).toBe(before);
    expect(await exists(abs(row.original_path))).toBe(true);
    expect(removed).toEqual([id]);
    // Gone from the feed.
    const feed = (await g.call("GET", "/feed", { token: guest.token })).json();
    expect(feed.items.map((i: { id: string }) => i.id)).not.toContain(id);
  });

  it("an attempt that died with the process counts (write-ahead): exhausted rows are failed at the next boot", async () => {
    const id = await uploaded(await solidJpeg());
    await g.built.ctx.database.db
      .updateTable("uploads")
      .set({ derivative_attempts: 3 })
      .where("id", "=", id)
      .execute();
    const w = worker(g);
    expect(await w.processPending()).toBe(0);
    expect((await uploadRow(g, id)).compression_status).toBe("processing");
    expect(await w.failExhausted()).toBe(1);
    expect(await uploadRow(g, id)).toMatchObject({ compression_status: "failed", deleted_by: "system" });
  });

  it("kills ffmpeg after the (injected) timeout and counts it as a failed attempt", async () => {
    const script = join(tmpdir(), `slow-ffmpeg-${process.pid}.sh`);
    // real-time: a stand-in ffmpeg that never finishes on its own; the injected clock's deadline ends it.
    await writeFile(script, "#!/bin/sh\nexec sleep 30\n");
    await chmod(script, 0o755);
    try {
      const id = await uploaded(await testMp4());
      const w = worker(g, { video: { ffmpegPath: script, ffprobePath: null, timeoutMs: 120_000 } });
      const run = w.processPending();
      await expect.poll(() => g.clock.pending()).toBeGreaterThan(0);
      // Three attempts, each waiting on its own deadline.
      for (let attempt = 0; attempt < 3; attempt++) {
        await expect.poll(() => g.clock.pending()).toBeGreaterThan(0);
        expect(g.clock.nextDelay()).toBe(120_000);
        await g.clock.advance(120_000);
      }
      await run;
      const row = await uploadRow(g, id);
      expect(row.compression_status).toBe("failed");
      expect(row.derivative_last_error).toMatch(/timed out after 120 s/);
    } finally {
      await rm(script, { force: true });
    }
  });

  it("two lanes share the queue without rendering anything twice", async () => {
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await uploaded(await solidJpeg(40 + i, 30)));
    const rendered: string[] = [];
    const off = g.built.ctx.bus.subscribe((e, d) => {
      if (e === "upload-processed") rendered.push(String(d.id));
    });
    expect(await worker(g, { concurrency: 2 }).processPending()).toBe(4);
    off();
    expect(rendered.sort()).toEqual([...ids].sort());
    for (const id of ids) expect((await uploadRow(g, id)).compression_status).toBe("done");
  });

  it("starts in the background and renders a new upload when it is announced", async () => {
    const w = worker(g, { pollMs: 3_600_000 });
    w.start();
    // Every upload-processed seen, so the wait is for this upload's own event (not the first of any).
    const processed = new Set<string>();
    let seen = () => {};
    const off = g.built.ctx.bus.subscribe((e, d) => {
      if (e === "upload-processed") {
        processed.add(String(d.id));
        seen();
      }
    });
    try {
      const id = await uploaded(await solidJpeg(30, 30));
      await new Promise<void>((resolve) => {
        seen = () => processed.has(id) && resolve();
        seen();
      });
      expect((await uploadRow(g, id)).compression_status).toBe("done");
    } finally {
      off();
      await w.stop();
    }
  });
});

describe("derivative backfill and media reclaim", () => {
  let g: Gallery;
  let guest: { token: string; id: string };
  const abs = (rel: string | null) => resolveMediaPath(g.built.ctx.paths.mediaDir, rel ?? "missing");
  beforeAll(async () => {
    g = await startGallery();
    guest = await g.join("Collector");
  });
  afterAll(async () => g.close());

  it("regenerates stale rows from the original, ≤200 per boot, giving up after 3 boots", async () => {
    const { db } = g.built.ctx.database;
    const res = await upload(g, guest.token, await solidJpeg(900, 900));
    const id = res.json().upload.id;
    await worker(g).processPending();
    const done = await uploadRow(g, id);
    await rm(abs(done.preview_path));
    await db
      .updateTable("uploads")
      .set({ derivatives_rev: DERIVATIVES_REV - 1 })
      .where("id", "=", id)
      .execute();
    // 201 stale rows whose original is gone: they fail, one boot each, and one waits for the next boot.
    const now = g.clock.iso();
    await db
      .insertInto("uploads")
      .values(
        Array.from({ length: 201 }, (_, i) => ({
          id: `00000000-0000-7000-8000-${String(i).padStart(12, "0")}`,
          user_id: guest.id,
          media_type: "image" as const,
          mime_type: "image/jpeg",
          original_path: `originals/none-${i}.jpg`,
          original_size_bytes: 1,
          compression_status: "done" as const,
          derivatives_rev: 0,
          created_at: `2026-11-21T11:00:00.${String(i % 1000).padStart(3, "0")}Z`,
          updated_at: now,
        })),
      )
      .execute();
    const w = worker(g);
    const first = await w.backfill();
    expect(first).toEqual({ regenerated: 0, failed: 200 });
    const boots = await db
      .selectFrom("uploads")
      .select(["derivative_boots"])
      .where("id", "like", "00000000-%")
      .execute();
    expect(boots.filter((b) => b.derivative_boots === 1)).toHaveLength(200);
    expect(g.logs.text()).toMatch(/derivative backfill: progress/);
    // Our real row is newest: it comes on the second boot (rows tried on fewer boots go first).
    const second = await w.backfill();
    expect(second.regenerated).toBe(1);
    const row = await uploadRow(g, id);
    expect(row.derivatives_rev).toBe(DERIVATIVES_REV);
    expect(await exists(abs(row.preview_path))).toBe(true);
    for (let boot = 0; boot < 5; boot++) await w.backfill();
    // Every broken row has now used its three boots and is left alone.
    const left = await db
      .selectFrom("uploads")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("derivatives_rev", "<", DERIVATIVES_REV)
      .where("derivative_boots", "<", 3)
      .executeTakeFirstOrThrow();
    expect(Number(left.n)).toBe(0);
    expect(await w.backfill()).toEqual({ regenerated: 0, failed: 0 });
    await db.deleteFrom("uploads").where("id", "like", "00000000-%").execute();
  });

  it("reclaims a deliberately deleted upload's four files after 24 h, not before", async () => {
    const res = await upload(g, guest.token, await solidJpeg(500, 400));
    const id = res.json().upload.id;
    await worker(g).processPending();
    const row = await uploadRow(g, id);
    const files = [row.original_path, row.preview_path, row.display_path, row.thumbnail_path].map(abs);
    expect((await g.call("DELETE", `/upload/${id}`, { token: guest.token })).statusCode).toBe(204);
    const w = worker(g);
    await g.clock.advance(23 * 3_600_000);
    expect((await w.reclaim()).deletedUploads).toBe(0);
    for (const f of files) expect(await exists(f)).toBe(true);
    await g.clock.advance(3_600_000);
    expect((await w.reclaim()).deletedUploads).toBe(1);
    for (const f of files) expect(await exists(f)).toBe(false);
    expect(await uploadRow(g, id)).toMatchObject({
      original_path: "",
      preview_path: null,
      display_path: null,
      thumbnail_path: null,
      media_reclaimed_at: g.clock.iso(),
    });
    expect((await w.reclaim()).deletedUploads).toBe(0);
  });

  it("reclaims a failed upload's original after 14 days", async () => {
    const broken = Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.alloc(3000, 1)]);
    const res = await upload(g, guest.token, broken);
    const id = res.json().upload.id;
    const w = worker(g);
    await w.processPending();
    const row = await uploadRow(g, id);
    expect(row.compression_status).toBe("failed");
    await g.clock.advance(13 * 24 * 3_600_000);
    expect((await w.reclaim()).failedOriginals).toBe(0);
    expect(await exists(abs(row.original_path))).toBe(true);
    await g.clock.advance(24 * 3_600_000);
    expect((await w.reclaim()).failedOriginals).toBe(1);
    expect(await exists(abs(row.original_path))).toBe(false);
    expect(await uploadRow(g, id)).toMatchObject({ original_path: "", media_reclaimed_at: g.clock.iso() });
  });
});
