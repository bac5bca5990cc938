import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { newId } from "@app/kit/ids";
import sharp from "sharp";
import type { Gallery } from "../core/harness.js";

/** Real media files on disk plus the upload rows pointing at them (the upload route is not under test here). */

export interface FixtureUpload {
  id: string;
  original: Buffer;
  caption: string;
}

let videoCache: Buffer | null = null;
/** A one-second real MP4 made by ffmpeg (cached per test file). */
export function tinyVideo(dir: string): Buffer {
  if (videoCache) return videoCache;
  const out = join(dir, `fixture-${newId()}.mp4`);
  execFileSync("/usr/bin/ffmpeg", [
    "-loglevel",
    "error",
    "-f",
    "lavfi",
    "-i",
    "testsrc=size=160x120:rate=10:duration=1",
    "-pix_fmt",
    "yuv420p",
    "-y",
    out,
  ]);
  videoCache = readFileSync(out);
  return videoCache;
}

const jpeg = (w: number, h: number, hue: number) =>
  sharp({ create: { width: w, height: h, channels: 3, background: { r: hue, g: 255 - hue, b: 120 } } })
    .jpeg({ quality: 80 })
    .toBuffer();

export async function addUpload(
  g: Gallery,
  userId: string,
  opts: { caption?: string; hashtags?: string[]; video?: boolean; at?: string; hue?: number } = {},
): Promise<FixtureUpload> {
  const { db } = g.built.ctx.database;
  const mediaDir = g.built.ctx.paths.mediaDir;
  mkdirSync(join(mediaDir, "originals"), { recursive: true });
  mkdirSync(join(mediaDir, "derivatives"), { recursive: true });
  const id = newId();
  const now = opts.at ?? g.clock.iso();
  const video = opts.video ?? false;
  const original = video ? tinyVideo(g.dataDir) : await jpeg(640, 480, opts.hue ?? 40);
  const ext = video ? "mp4" : "jpg";
  writeFileSync(join(mediaDir, "originals", `${id}.${ext}`), original);
  const thumb = await jpeg(80, 60, opts.hue ?? 40);
  writeFileSync(join(mediaDir, "derivatives", `${id}-thumbnail.jpg`), thumb);
  if (!video)
    writeFileSync(join(mediaDir, "derivatives", `${id}-display.jpg`), await jpeg(320, 240, opts.hue ?? 40));
  const caption = opts.caption ?? `caption ${id.slice(-4)}`;
  await db
    .insertInto("uploads")
    .values({
      id,
      user_id: userId,
      client_upload_id: null,
      caption,
      media_type: video ? "video" : "image",
      mime_type: video ? "video/mp4" : "image/jpeg",
      original_path: `originals/${id}.${ext}`,
      preview_path: null,
      display_path: video ? null : `derivatives/${id}-display.jpg`,
      thumbnail_path: `derivatives/${id}-thumbnail.jpg`,
      original_size_bytes: original.length,
      width: video ? 160 : 640,
      height: video ? 120 : 480,
      duration_s: video ? 1 : null,
      compression_status: "done",
      // Newer than any derivative pipeline, so the backfill leaves these fixture files alone.
      derivatives_rev: 1_000,
      deleted_at: null,
      deleted_by: null,
      media_reclaimed_at: null,
      derivative_last_error: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  for (const tag of opts.hashtags ?? [])
    await db.insertInto("upload_hashtags").values({ upload_id: id, tag }).execute();
  return { id, original, caption };
}

export async function addComment(g: Gallery, uploadId: string, userId: string, text: string): Promise<void> {
  await g.built.ctx.database.db
    .insertInto("comments")
    .values({
      id: newId(),
      upload_id: uploadId,
      user_id: userId,
      text,
      created_at: g.clock.iso(),
      deleted_at: null,
      deleted_by: null,
    })
    .execute();
}

/** Entry names of a zip, read by Info-ZIP's unzip (an independent reader). */
export const zipNames = (file: string): string[] =>
  execFileSync("unzip", ["-Z1", file], { encoding: "utf8" }).split("\n").filter(Boolean);

export const zipEntry = (file: string, name: string): Buffer =>
  execFileSync("unzip", ["-p", file, name], { maxBuffer: 64 * 1024 * 1024 });

/** `unzip -t` verifies every entry's CRC; it exits non-zero on a damaged archive. */
export const zipTest = (file: string): string => execFileSync("unzip", ["-t", file], { encoding: "utf8" });
