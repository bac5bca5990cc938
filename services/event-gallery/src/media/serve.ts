import { stat } from "node:fs/promises";
import { notFound } from "@app/kit/errors";
import type { GalleryContext } from "../context.js";
import type { MediaVariant } from "../feed/serialize.js";
import { resolveMediaPath } from "../uploads/storage.js";
import { servableUpload } from "./repository.js";

export interface MediaFile {
  path: string;
  size: number;
  contentType: string;
  headers: Record<string, string>;
}

const missing = () => notFound("This media does not exist.");

export type MediaFilesDeps = Pick<GalleryContext, "database" | "paths">;

export type MediaFiles = ReturnType<typeof createMediaFiles>;

/** Which file on disk answers a media request. */
export function createMediaFiles(deps: MediaFilesDeps) {
  /**
   * Which file answers GET /upload/{id}/{variant}. Soft-deleted uploads and uploads of banned or
   * hidden users are not served; a derivative that does not exist yet is a 404; a video has only
   * a thumbnail besides its original.
   */
  async function resolveMedia(
    id: string,
    variant: MediaVariant,
    viewer?: { id: string; role: string },
    /** Upload-only mode: the viewer may see only their own uploads. */
    opts: { ownOnly?: boolean } = {},
  ): Promise<MediaFile> {
    const row = await servableUpload(deps.database.db, id);
    if (!row) throw missing();
    if (opts.ownOnly && row.user_id !== viewer?.id) throw missing();
    // A pending upload (pre-moderation) is served only to its uploader and hosts.
    if (row.approval === "pending" && !(viewer && (viewer.id === row.user_id || viewer.role !== "guest")))
      throw missing();
    if (row.media_type === "video" && (variant === "preview" || variant === "display")) throw missing();
    const rel = {
      original: row.original_path,
      preview: row.preview_path,
      display: row.display_path,
      thumbnail: row.thumbnail_path,
    }[variant];
    if (!rel) throw missing();
    const path = resolveMediaPath(deps.paths.mediaDir, rel);
    const info = await stat(path).catch(() => null);
    if (!info?.isFile()) throw missing();
    if (variant === "original")
      return {
        path,
        size: info.size,
        contentType: row.mime_type,
        headers: { "content-disposition": "inline", "cache-control": "no-store" },
      };
    // Derivatives never change for an id, but access is gated, so only the browser may cache.
    return {
      path,
      size: info.size,
      contentType: "image/jpeg",
      headers: { "cache-control": "private, max-age=3600" },
    };
  }

  return { resolveMedia };
}
