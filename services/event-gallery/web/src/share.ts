import type { Item } from "./api.js";
import { joinUrl, publicEvent } from "./branding.js";
import { t } from "./i18n.js";

const EXT: Record<string, string> = {
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

/** A file name for a downloaded original: uploader and time, safe on every system. */
export function downloadName(item: Item): string {
  const who = item.uploader.display_name.replace(/[^\p{L}\p{N}_-]+/gu, "_").slice(0, 40) || "photo";
  const when = item.created_at.slice(0, 19).replace(/[:T]/g, "-");
  const ext = (item.mime_type && EXT[item.mime_type]) ?? (item.media_type === "video" ? "mp4" : "jpg");
  return `${who}_${when}.${ext}`;
}

/**
 * The system share sheet where the browser has one: the photo itself when files can be shared,
 * else the gallery's join link; without Web Share, the link goes to the clipboard. Resolves to a
 * note to show, or null.
 */
export async function shareItem(item: Item): Promise<string | null> {
  const link = joinUrl(publicEvent.value);
  const text = item.caption || publicEvent.value?.name || "";
  try {
    const url = item.display_url ?? item.preview_url ?? item.original_url;
    if (url && typeof navigator.canShare === "function" && item.media_type === "image") {
      const blob = await (await fetch(url)).blob();
      const file = new File([blob], downloadName({ ...item, mime_type: "image/jpeg" }), { type: blob.type });
      if (navigator.canShare({ files: [file] })) {
        await navigator.share({ files: [file], text });
        return null;
      }
    }
    if (typeof navigator.share === "function") {
      await navigator.share({ title: text, text, url: link });
      return null;
    }
    await navigator.clipboard.writeText(link);
    return t("link_copied");
  } catch (err) {
    // The person closed the share sheet: nothing to report.
    if ((err as Error).name === "AbortError") return null;
    return t("error");
  }
}
