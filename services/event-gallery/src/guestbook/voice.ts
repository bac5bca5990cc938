import { mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";
import { Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { AppError } from "@app/kit/errors";
import { fileTypeFromBuffer } from "file-type";
import { defaultVideoTools, runTool, type VideoTools } from "../derivatives/pipeline.js";
import type { FilePart } from "../uploads/ingest.js";
import { originalRelPath, publishFile, removeQuietly, resolveMediaPath } from "../uploads/storage.js";
import { ownedTempPath } from "../uploads/temp-owners.js";

/** A voice message: at most this long (issue 27). */
export const VOICE_MAX_SECONDS = 60;
/** Bytes a 60 s recording can need at a generous bitrate; more is refused unread. */
export const VOICE_MAX_BYTES = 8 * 1024 * 1024;

/** Containers a browser's MediaRecorder (or a phone's recorder app) produces for audio. */
const CONTAINERS: Record<string, { mime: string; ext: string }> = {
  "video/webm": { mime: "audio/webm", ext: "webm" },
  "audio/webm": { mime: "audio/webm", ext: "webm" },
  "audio/ogg": { mime: "audio/ogg", ext: "ogg" },
  "audio/opus": { mime: "audio/ogg", ext: "ogg" },
  "video/mp4": { mime: "audio/mp4", ext: "m4a" },
  "audio/mp4": { mime: "audio/mp4", ext: "m4a" },
  "audio/x-m4a": { mime: "audio/mp4", ext: "m4a" },
  "audio/mpeg": { mime: "audio/mpeg", ext: "mp3" },
};

export const unsupportedVoice = () =>
  new AppError(
    415,
    "unsupported_media_type",
    "A voice message must be an audio recording (WebM, Ogg, MP4/M4A or MP3) without video.",
  );
export const voiceTooLong = () =>
  new AppError(422, "voice_too_long", `A voice message may be at most ${VOICE_MAX_SECONDS} seconds long.`, {
    field: "file",
    limit: VOICE_MAX_SECONDS,
  });
const voiceTooLarge = () =>
  new AppError(413, "payload_too_large", "The voice message file is too large.", { limit: VOICE_MAX_BYTES });

export interface StoredVoice {
  relPath: string;
  absPath: string;
  mime: string;
  size: number;
  duration_s: number;
}

export type VoiceTools = Pick<VideoTools, "ffprobePath" | "timeoutMs" | "clock"> & { ffmpegPath: string };

export const voiceTools = (
  clock: VideoTools["clock"],
  env: { FFMPEG_PATH?: string | undefined; FFPROBE_PATH?: string | undefined },
): VoiceTools => ({ ...defaultVideoTools(clock, env), timeoutMs: 15_000 });

interface Probe {
  streams?: { codec_type?: string; disposition?: { attached_pic?: number } }[];
  format?: { duration?: string };
}

/**
 * Length in seconds of an audio-only file, from ffprobe; null when it is not audio, carries a
 * video stream (cover art aside), or cannot be read. Recordings from a browser often carry no
 * duration in their header: then the last audio packet's end is the length.
 */
export async function probeVoice(path: string, tools: VoiceTools): Promise<number | null> {
  const probe = tools.ffprobePath ?? "ffprobe";
  let info: Probe;
  try {
    const out = await runTool(
      probe,
      [
        "-v",
        "error",
        "-show_entries",
        "format=duration:stream=codec_type:stream_disposition=attached_pic",
        "-of",
        "json",
        path,
      ],
      tools as VideoTools,
      256 * 1024,
    );
    info = JSON.parse(out.toString("utf8")) as Probe;
  } catch {
    return null;
  }
  const streams = info.streams ?? [];
  if (!streams.some((s) => s.codec_type === "audio")) return null;
  if (streams.some((s) => s.codec_type === "video" && s.disposition?.attached_pic !== 1)) return null;
  const declared = Number.parseFloat(info.format?.duration ?? "");
  if (Number.isFinite(declared) && declared > 0) return declared;
  try {
    const out = await runTool(
      probe,
      [
        "-v",
        "error",
        "-select_streams",
        "a:0",
        "-show_entries",
        "packet=pts_time,duration_time",
        "-of",
        "csv=p=0",
        path,
      ],
      tools as VideoTools,
      4 * 1024 * 1024,
    );
    let end = 0;
    for (const line of out.toString("utf8").split("\n")) {
      const [pts, dur] = line.split(",").map((v) => Number.parseFloat(v));
      if (pts !== undefined && Number.isFinite(pts))
        end = Math.max(end, pts + (Number.isFinite(dur) ? (dur as number) : 0));
    }
    return end > 0 ? end : null;
  } catch {
    // Output past the bound means far more packets than a minute holds.
    return Number.POSITIVE_INFINITY;
  }
}

/**
 * Stream a voice message to a temp file in the originals folder, check its type (sniffed) and
 * length (ffprobe), then rename it into place under `id`. Nothing is left on disk when this throws.
 */
export async function storeVoice(
  mediaDir: string,
  part: FilePart,
  id: string,
  tools: VoiceTools,
  /** This instance's temp-file owner (uploads/temp-owners.ts): a crash leaves nothing for long. */
  owner: string,
): Promise<StoredVoice> {
  const probeTarget = resolveMediaPath(mediaDir, originalRelPath(id, "voice"));
  const tmp = ownedTempPath(probeTarget, owner);
  await mkdir(dirname(probeTarget), { recursive: true });
  const fh = await open(tmp, "wx");
  let size = 0;
  const head: Buffer[] = [];
  let headBytes = 0;
  try {
    await pipeline(
      part.file,
      new Writable({
        write(chunk: Buffer, _enc, cb) {
          size += chunk.length;
          if (headBytes < 4100) {
            head.push(chunk);
            headBytes += chunk.length;
          }
          fh.write(chunk).then(() => cb(), cb);
        },
      }),
    );
    if (part.file.truncated) throw voiceTooLarge();
    await fh.sync();
    await fh.close();
    const found = size > 0 ? await fileTypeFromBuffer(Buffer.concat(head)) : undefined;
    const type = found ? CONTAINERS[found.mime] : undefined;
    if (!type) throw unsupportedVoice();
    const duration = await probeVoice(tmp, tools);
    if (duration === null) throw unsupportedVoice();
    // A little slack: encoders pad the last frame.
    if (duration > VOICE_MAX_SECONDS + 0.5) throw voiceTooLong();
    const relPath = originalRelPath(id, type.ext);
    const absPath = resolveMediaPath(mediaDir, relPath);
    await publishFile(tmp, absPath);
    return { relPath, absPath, mime: type.mime, size, duration_s: Math.round(duration * 10) / 10 };
  } catch (err) {
    await fh.close().catch(() => {});
    await removeQuietly(tmp);
    throw err;
  }
}
