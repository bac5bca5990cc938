import { toIso } from "@app/kit/clock";
import { validationFailed } from "@app/kit/errors";

/** A keyset position (created_at, id) and its opaque cursor form, for the lists outside /feed. */
export interface PageKey {
  created_at: string;
  id: string;
}

export const encodePageKey = (k: PageKey) =>
  Buffer.from(JSON.stringify([k.created_at, k.id])).toString("base64url");

/** The key of a cursor this server issued; 422 `validation_failed` on `cursor` otherwise. */
export function decodePageKey(raw: string): PageKey {
  try {
    const v = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "string") {
      const at = Date.parse(v[0]);
      if (!Number.isNaN(at) && v[1].length <= 64) return { created_at: toIso(at), id: v[1] };
    }
  } catch {}
  throw validationFailed("cursor", "The cursor is not one this server issued.");
}
