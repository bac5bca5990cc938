import { execFile } from "node:child_process";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { LightMyRequestResponse } from "fastify";
import sharp from "sharp";
import type { Settings } from "../../src/context.js";
import { createDerivativeWorker, type DerivativeWorkerOptions } from "../../src/derivatives/worker.js";
import type { EditableSettingsStore } from "../../src/settings/store.js";
import { type Gallery, startGallery } from "../core/harness.js";
import { ffmpegFromSource } from "./ffmpeg.js";

export { type Gallery, startGallery };

const _run = promisify(execFile);

/** A multipart body as a browser would send it (fields first, then the file). */
export async function multipart(
  fields: [string, string][],
  file?: { data: Buffer; name?: string; type?: string },
): Promise<{ payload: Buffer; headers: Record<string, string> }> {
  const fd = new FormData();
  for (const [k, v] of fields) fd.append(k, v);
  if (file)
    fd.append(
      "file",
      new Blob([new Uint8Array(file.data)], { type: file.type ?? "application/octet-stream" }),
      file.name ?? "photo.bin",
    );
  const req = new Request("http://local/", { method: "POST", body: fd });
  return {
    payload: Buffer.from(await req.arrayBuffer()),
    headers: { "content-type": req.headers.get("content-type") ?? "" },
  };
}

export async function upload(
  g: Gallery,
  token: string,
  file: Buffer,
  fields: [string, string][] = [],
  fileType = "image/jpeg",
): Promise<LightMyRequestResponse> {
  const body = await multipart(fields, { data: file, type: fileType });
  return g.built.app.inject({
    method: "POST",
    url: "/api/v1/upload",
    headers: { ...body.headers, authorization: `Bearer ${token}` },
    payload: body.payload,
  });
}

export const solidJpeg = (width = 64, height = 48, rgb = { r: 200, g: 30, b: 30 }) =>
  sharp({ create: { width, height, channels: 3, background: rgb } })
    .jpeg()
    .toBuffer();

/** Random pixels: does not compress, so its size is predictable. */
export const noiseJpeg = (width: number, height: number) => {
  const raw = Buffer.alloc(width * height * 3);
  for (let i = 0; i < raw.length; i++) raw[i] = Math.floor(Math.random() * 256);
  return sharp(raw, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 95 })
    .toBuffer();
};

export const solidPng = (width = 40, height = 30) =>
  sharp({ create: { width, height, channels: 4, background: { r: 0, g: 0, b: 255, alpha: 0.5 } } })
    .png()
    .toBuffer();

/**
 * 300×200 as stored, left half red and right half blue, with EXIF orientation 6: it displays as
 * 200×300 with red on top.
 */
export async function rotatedJpeg(): Promise<Buffer> {
  const half = await sharp({
    create: { width: 150, height: 200, channels: 3, background: { r: 0, g: 0, b: 255 } },
  })
    .png()
    .toBuffer();
  return sharp({ create: { width: 300, height: 200, channels: 3, background: { r: 255, g: 0, b: 0 } } })
    .composite([{ input: half, left: 150, top: 0 }])
    .jpeg()
    .withMetadata({ orientation: 6 })
    .toBuffer();
}

/** A real one-second MP4 made by ffmpeg. */
export const testMp4 = (): Promise<Buffer> =>
  ffmpegFromSource("testsrc=duration=1:size=320x240:rate=10", ["-pix_fmt", "yuv420p"], "mp4");

/** Change runtime settings the way PATCH /admin/config does. */
export async function setSettings(g: Gallery, patch: Partial<Settings>): Promise<void> {
  await (g.built.ctx.settings as EditableSettingsStore).update(patch);
}

export const uploadRow = (g: Gallery, id: string) =>
  g.built.ctx.database.db.selectFrom("uploads").selectAll().where("id", "=", id).executeTakeFirstOrThrow();

export const userBytes = async (g: Gallery, id: string) =>
  Number(
    (
      await g.built.ctx.database.db
        .selectFrom("users")
        .select("total_upload_bytes")
        .where("id", "=", id)
        .executeTakeFirstOrThrow()
    ).total_upload_bytes,
  );

/** Files (temp files included) in the given media folders. */
export async function mediaFiles(g: Gallery, dirs = ["originals"]): Promise<string[]> {
  const root = g.built.ctx.paths.mediaDir;
  const out: string[] = [];
  for (const dir of dirs) {
    const names = await readdir(join(root, dir)).catch(() => [] as string[]);
    out.push(...names.map((n) => `${dir}/${n}`));
  }
  return out.sort();
}

export const worker = (g: Gallery, opts: DerivativeWorkerOptions = {}) =>
  createDerivativeWorker(g.built.ctx, opts);
