import { fileTypeFromBuffer } from "file-type";

export interface SniffedType {
  media_type: "image" | "video";
  mime_type: string;
  ext: string;
}

/** Bytes enough for file-type to recognise every accepted container. */
export const SNIFF_BYTES = 4100;

const ACCEPTED: Record<string, SniffedType> = {
  "image/jpeg": { media_type: "image", mime_type: "image/jpeg", ext: "jpg" },
  "image/png": { media_type: "image", mime_type: "image/png", ext: "png" },
  "image/webp": { media_type: "image", mime_type: "image/webp", ext: "webp" },
  "image/gif": { media_type: "image", mime_type: "image/gif", ext: "gif" },
  "image/heic": { media_type: "image", mime_type: "image/heic", ext: "heic" },
  "image/heic-sequence": { media_type: "image", mime_type: "image/heic", ext: "heic" },
  "image/heif": { media_type: "image", mime_type: "image/heif", ext: "heif" },
  "image/heif-sequence": { media_type: "image", mime_type: "image/heif", ext: "heif" },
  "image/avif": { media_type: "image", mime_type: "image/avif", ext: "avif" },
  "video/mp4": { media_type: "video", mime_type: "video/mp4", ext: "mp4" },
  "video/quicktime": { media_type: "video", mime_type: "video/quicktime", ext: "mov" },
  "video/webm": { media_type: "video", mime_type: "video/webm", ext: "webm" },
};

/**
 * The upload's type from its first bytes; the client's filename and Content-Type are never
 * consulted. null for anything outside the accepted list.
 */
export async function sniffMediaType(head: Uint8Array): Promise<SniffedType | null> {
  const found = await fileTypeFromBuffer(head);
  return found ? (ACCEPTED[found.mime] ?? null) : null;
}
