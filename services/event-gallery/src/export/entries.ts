import { extname } from "node:path";
import type { SnapshotUpload } from "./repository.js";

/** Archive entry naming: portable file names (Windows, macOS, Linux unzip tools). */

const RESERVED_WIN = /^(con|prn|aux|nul|com[1-9]|lpt[1-9])$/i;

/** A display name as a folder name: no separators, controls or characters Windows refuses. */
export function sanitizeName(name: string): string {
  let s = name
    .normalize("NFC")
    .replace(/[\u0000-\u001f\u007f<>:"/\\|?*]/g, "_")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^[.\s]+|[.\s]+$/g, "");
  if (s.length > 60) s = s.slice(0, 60).trim();
  if (!s) s = "guest";
  if (RESERVED_WIN.test(s)) s = `_${s}`;
  return s;
}

/** One folder per uploader; two names that sanitise alike get a numbered suffix. */
export function folderNames(uploads: readonly SnapshotUpload[]): Map<string, string> {
  const byUser = new Map<string, string>();
  const taken = new Set<string>();
  for (const u of uploads) {
    if (byUser.has(u.user_id)) continue;
    const base = sanitizeName(u.display_name);
    let name = base;
    for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${base} (${n})`;
    taken.add(name.toLowerCase());
    byUser.set(u.user_id, name);
  }
  return byUser;
}

const MIME_EXT: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/webp": "webp",
  "image/gif": "gif",
  "image/heic": "heic",
  "image/heif": "heif",
  "video/mp4": "mp4",
  "video/quicktime": "mov",
  "video/webm": "webm",
};

/** Extension of the stored file, else from the sniffed MIME type. */
export function extensionOf(path: string, mime: string): string {
  const fromPath = extname(path).slice(1).toLowerCase();
  if (/^[a-z0-9]{1,5}$/.test(fromPath)) return fromPath;
  return MIME_EXT[mime] ?? "bin";
}

/** `created_at` with the colons Windows refuses in file names replaced by dashes. */
export const timeStamp = (iso: string) => iso.replace(/:/g, "-");

export const galleryEntryName = (folder: string, u: SnapshotUpload) =>
  `${folder}/${timeStamp(u.created_at)}_${u.id}.${extensionOf(u.original_path, u.mime_type)}`;
