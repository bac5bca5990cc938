import { stat } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { AppError, notFound } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import sharp from "sharp";
import type { GalleryContext } from "../context.js";
import { sniffMediaType } from "../uploads/sniff.js";
import { removeQuietly, writeFileDurably } from "../uploads/storage.js";
import * as repo from "./repository.js";

/** Largest cover file accepted; the stored cover is re-encoded to at most 2048 px. */
export const COVER_MAX_BYTES = 20 * 1024 * 1024;
const COVER_EDGE = 2048;
const COVER_TYPES = new Set(["image/jpeg", "image/png", "image/webp", "image/gif"]);

export interface PublicEvent {
  name: string;
  welcome_text_en: string;
  welcome_text_de: string;
  accent_color: string;
  cover_url: string | null;
  public_url: string | null;
}

const badCover = () =>
  new AppError(415, "unsupported_media_type", "The cover must be a JPEG, PNG, WebP or GIF image.");

/** Read a stream into memory up to `max` bytes; past it, 413. */
async function readBounded(stream: Readable, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > max) {
      stream.resume();
      throw new AppError(413, "payload_too_large", "The cover image is larger than 20 MB.", { limit: max });
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** What the event card and the cover photo need of the gallery context. */
export type BrandingDeps = Pick<
  GalleryContext,
  "config" | "settings" | "database" | "clock" | "paths" | "tempOwner"
>;

export type BrandingService = ReturnType<typeof createBrandingService>;

export function createBrandingService(deps: BrandingDeps) {
  const dir = join(deps.paths.dataDir, "branding");

  /** The address guests open: the admin's setting, else GALLERY_PUBLIC_URL, else unknown (null). */
  async function publicUrl(): Promise<string | null> {
    return (await deps.settings.get("public_url")) ?? deps.config.GALLERY_PUBLIC_URL ?? null;
  }

  /** GET /event/public: what the join page and the keepsake viewer show before anyone signs in. */
  async function publicEvent(): Promise<PublicEvent> {
    const [s, cover, url] = await Promise.all([
      deps.settings.all(),
      repo.readCover(deps.database.db),
      publicUrl(),
    ]);
    return {
      name: s.event_name,
      welcome_text_en: s.welcome_text_en,
      welcome_text_de: s.welcome_text_de,
      accent_color: s.accent_color,
      // The version in the query lets browsers cache each cover for good.
      cover_url: cover.cover_path
        ? `/api/v1/event/cover?v=${Date.parse(cover.cover_updated_at ?? "") || 0}`
        : null,
      public_url: url,
    };
  }

  /**
   * PUT /admin/cover: sniff, re-encode (EXIF orientation applied, metadata such as GPS dropped),
   * store durably, then point the event row at it and remove the previous file.
   */
  async function setCover(file: Readable): Promise<PublicEvent> {
    const bytes = await readBounded(file, COVER_MAX_BYTES);
    const type = bytes.length > 0 ? await sniffMediaType(bytes.subarray(0, 4100)) : null;
    if (!type || !COVER_TYPES.has(type.mime_type)) throw badCover();
    let jpeg: Buffer;
    try {
      // sharp decodes on libuv's thread pool: the event loop stays free.
      jpeg = await sharp(bytes, { limitInputPixels: 100_000_000 })
        .autoOrient()
        .resize({ width: COVER_EDGE, height: COVER_EDGE, fit: "inside", withoutEnlargement: true })
        .jpeg({ quality: 85 })
        .toBuffer();
    } catch {
      throw badCover();
    }
    const rel = `cover-${newId()}.jpg`;
    await writeFileDurably(join(dir, rel), jpeg, deps.tempOwner);
    const before = await repo.readCover(deps.database.db);
    await repo.writeCover(deps.database.db, {
      cover_path: rel,
      cover_mime: "image/jpeg",
      cover_updated_at: deps.clock.iso(),
    });
    if (before.cover_path) await removeQuietly(join(dir, before.cover_path));
    return publicEvent();
  }

  /** DELETE /admin/cover. */
  async function removeCover(): Promise<void> {
    const before = await repo.readCover(deps.database.db);
    await repo.writeCover(deps.database.db, {
      cover_path: null,
      cover_mime: null,
      cover_updated_at: deps.clock.iso(),
    });
    if (before.cover_path) await removeQuietly(join(dir, before.cover_path));
  }

  /** GET /event/cover: the stored file, or 404 when there is none. */
  async function coverFile(): Promise<{ path: string; contentType: string }> {
    const c = await repo.readCover(deps.database.db);
    // Stored names are generated here (cover-<uuid>.jpg), never taken from a request.
    if (!c.cover_path || !/^cover-[0-9a-f-]{36}\.jpg$/.test(c.cover_path))
      throw notFound("There is no cover photo.");
    return { path: join(dir, c.cover_path), contentType: c.cover_mime ?? "image/jpeg" };
  }

  /** The stored cover photo on disk, or null when there is none (or its file is gone). */
  async function storedCover(): Promise<{ file: string; size: number } | null> {
    const c = await repo.readCover(deps.database.db);
    if (!c.cover_path) return null;
    const file = join(dir, c.cover_path);
    const info = await stat(file).catch(() => null);
    return info?.isFile() ? { file, size: info.size } : null;
  }

  return { publicEvent, setCover, removeCover, coverFile, storedCover };
}
