/// <reference path="./heic-decode.d.ts" />
import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Clock } from "@app/kit/clock";
import decodeHeic from "heic-decode";
import sharp, { type Sharp } from "sharp";

/**
 * Version of the derivative pipeline. Raise it when the output changes; rows rendered by an
 * older version are regenerated from the original by the boot backfill.
 */
export const DERIVATIVES_REV = 1;

/** Long-edge sizes; none is ever upscaled. */
export const SIZES = { display: 2048, preview: 800, thumbnail: 400 } as const;

export interface Rendered {
  /** Of the original, after EXIF orientation. */
  width: number;
  height: number;
  duration_s: number | null;
  thumbnail: Buffer;
  /** Images only: a video has only a thumbnail. */
  preview: Buffer | null;
  display: Buffer | null;
}

export interface VideoTools {
  ffmpegPath: string;
  /** null: no ffprobe, duration stays unknown. */
  ffprobePath: string | null;
  timeoutMs: number;
  clock: Clock;
}

/** FFMPEG_PATH or `ffmpeg` on PATH; ffprobe next to it (or on PATH). */
export function defaultVideoTools(
  clock: Clock,
  env: { FFMPEG_PATH?: string | undefined; FFPROBE_PATH?: string | undefined } = {},
): VideoTools {
  const ffmpegPath = env.FFMPEG_PATH || "ffmpeg";
  const ffprobePath =
    env.FFPROBE_PATH || (env.FFMPEG_PATH ? join(dirname(env.FFMPEG_PATH), "ffprobe") : "ffprobe");
  return { ffmpegPath, ffprobePath, timeoutMs: 120_000, clock };
}

/**
 * Encoders: mozjpeg only for the 400 px thumbnail (cheap at that size, and the bytes every feed
 * tile loads); libjpeg-turbo with optimised Huffman tables for preview and display, many times
 * faster there for slightly larger files (README, Derivatives): that difference decides how long
 * a burst of uploads waits for its derivatives.
 */
const JPEG = { quality: 82, mozjpeg: true } as const;
const JPEG_FAST = { quality: 82, optimiseCoding: true } as const;
const fitInside = (edge: number) => ({
  width: edge,
  height: edge,
  fit: "inside" as const,
  withoutEnlargement: true,
});

/**
 * A render in two steps: the thumbnail is ready first (so the feed tile can show while the larger
 * variants are still being encoded); `larger()` encodes preview and display from the same decode.
 */
export interface StagedRender {
  /** Of the original, after EXIF orientation. */
  width: number;
  height: number;
  duration_s: number | null;
  thumbnail: Buffer;
  /** Images: preview and display from the same decoded pixels; null for a video (thumbnail only). */
  larger: (() => Promise<{ preview: Buffer; display: Buffer }>) | null;
}

/**
 * One decode of the original (oriented, flattened, shrunk to the display size) feeds all three
 * derivatives; the thumbnail is encoded first. HEIC/HEIF goes through the WASM libheif decoder
 * when sharp's prebuilt libvips (no HEVC) cannot read it.
 */
export async function renderImageStaged(path: string, mime: string): Promise<StagedRender> {
  let source: Sharp;
  let width: number;
  let height: number;
  try {
    const meta = await sharp(path).metadata();
    width = meta.autoOrient.width;
    height = meta.autoOrient.height;
    source = sharp(path, { failOn: "none" }).autoOrient();
    if (mime === "image/heic" || mime === "image/heif") await source.clone().resize(8, 8).raw().toBuffer();
  } catch (err) {
    if (mime !== "image/heic" && mime !== "image/heif") throw err;
    // libheif applies the HEIF rotation/mirror properties itself.
    const decoded = await decodeHeic({ buffer: await readFile(path) });
    width = decoded.width;
    height = decoded.height;
    source = sharp(Buffer.from(decoded.data.buffer, decoded.data.byteOffset, decoded.data.byteLength), {
      raw: { width, height, channels: 4 },
    });
  }
  const { data, info } = await source
    .resize(fitInside(SIZES.display))
    .flatten({ background: "#ffffff" })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const raw = { raw: { width: info.width, height: info.height, channels: info.channels } };
  const thumbnail = await sharp(data, raw).resize(fitInside(SIZES.thumbnail)).jpeg(JPEG).toBuffer();
  const larger = async () => {
    const [display, preview] = await Promise.all([
      sharp(data, raw).jpeg(JPEG_FAST).toBuffer(),
      sharp(data, raw).resize(fitInside(SIZES.preview)).jpeg(JPEG_FAST).toBuffer(),
    ]);
    return { display, preview };
  };
  return { width, height, duration_s: null, thumbnail, larger };
}

/** All three image derivatives at once (one decode). */
export async function renderImage(path: string, mime: string): Promise<Rendered> {
  const { larger, ...first } = await renderImageStaged(path, mime);
  const { preview, display } = await (larger as NonNullable<typeof larger>)();
  return { ...first, preview, display };
}

/** A video's thumbnail is one frame (ffmpeg honours the rotation metadata); duration via ffprobe. */
export async function renderVideo(path: string, tools: VideoTools): Promise<Rendered> {
  const duration = tools.ffprobePath ? await probeDuration(path, tools).catch(() => null) : null;
  const at = duration && duration > 0 ? Math.min(1, duration / 2) : 0;
  const frame = await runTool(
    tools.ffmpegPath,
    [
      "-hide_banner",
      "-loglevel",
      "error",
      "-nostdin",
      "-ss",
      at.toFixed(3),
      "-i",
      path,
      "-frames:v",
      "1",
      "-f",
      "image2",
      "-c:v",
      "png",
      "pipe:1",
    ],
    tools,
    64 * 1024 * 1024,
  );
  if (frame.length === 0) throw new Error("ffmpeg produced no frame");
  const meta = await sharp(frame).metadata();
  const thumbnail = await sharp(frame).resize(fitInside(SIZES.thumbnail)).jpeg(JPEG).toBuffer();
  return {
    width: meta.width,
    height: meta.height,
    duration_s: duration,
    thumbnail,
    preview: null,
    display: null,
  };
}

async function probeDuration(
  path: string,
  tools: VideoTools & { ffprobePath: string | null },
): Promise<number | null> {
  const out = await runTool(
    tools.ffprobePath ?? "ffprobe",
    ["-v", "error", "-show_entries", "format=duration", "-of", "default=noprint_wrappers=1:nokey=1", path],
    tools,
    64 * 1024,
  );
  const d = Number.parseFloat(out.toString("utf8").trim());
  return Number.isFinite(d) && d >= 0 ? Math.round(d * 1000) / 1000 : null;
}

/** Run a tool with a deadline (on the injected clock) and a bound on what it may print. */
export function runTool(cmd: string, args: string[], tools: VideoTools, maxOut: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    let outBytes = 0;
    let errText = "";
    let failure: Error | null = null;
    const timer = tools.clock.setTimeout(() => {
      failure = new Error(`${basename(cmd)} timed out after ${Math.round(tools.timeoutMs / 1000)} s`);
      child.kill("SIGKILL");
    }, tools.timeoutMs);
    child.stdout.on("data", (b: Buffer) => {
      outBytes += b.length;
      if (outBytes > maxOut) {
        failure = new Error(`${basename(cmd)} output exceeded ${maxOut} bytes`);
        child.kill("SIGKILL");
      } else out.push(b);
    });
    child.stderr.on("data", (b: Buffer) => {
      if (errText.length < 2000) errText += b.toString("utf8");
    });
    child.on("error", (err) => {
      timer.cancel();
      reject(err);
    });
    child.on("close", (code) => {
      timer.cancel();
      if (failure) reject(failure);
      else if (code !== 0)
        reject(new Error(`${basename(cmd)} exited with code ${code}: ${errText.split("\n")[0] ?? ""}`));
      else resolve(Buffer.concat(out));
    });
  });
}

const basename = (cmd: string) => cmd.split("/").pop() ?? cmd;
