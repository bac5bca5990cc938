import { posix } from "node:path";

const MEDIA_PREFIX = /^(?:\/api\/v1)?\/media(?:\/|$)/;
/** Slash-separated segments of unreserved letters only: decoding and normalizing change nothing. */
const PLAIN_PATH = /^(?:\/[A-Za-z0-9_~-]+)*\/?$/;

/**
 * Media is only ever served through the gated /upload/{id}/... routes. A path under /media/ (or
 * /api/v1/media/) is refused however it is encoded: the path is percent-decoded until stable
 * (double encoding), slashes are collapsed and dot segments resolved before the check.
 */
export function isMediaPath(rawUrl: string): boolean {
  const q = rawUrl.indexOf("?");
  let path = q === -1 ? rawUrl : rawUrl.slice(0, q);
  // Most paths (every API call) are already plain: nothing to decode or normalize.
  if (PLAIN_PATH.test(path)) return MEDIA_PREFIX.test(path);
  for (let i = 0; i < 5; i++) {
    let next: string;
    try {
      next = decodeURIComponent(path);
    } catch {
      // A malformed escape: decode what can be decoded and stop.
      next = path.replace(/%[0-9a-fA-F]{2}/g, (m) => String.fromCharCode(Number.parseInt(m.slice(1), 16)));
    }
    if (next === path) break;
    path = next;
  }
  const normal = posix.normalize(`/${path.replace(/\\/g, "/")}`.replace(/\/{2,}/g, "/"));
  return MEDIA_PREFIX.test(normal);
}
