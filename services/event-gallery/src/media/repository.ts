import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/**
 * The paths of a live upload whose uploader is neither banned nor hidden, with what the media
 * routes decide on (owner, approval, media type); undefined when it may not be served at all.
 */
export function servableUpload(db: Kysely<GalleryDB>, id: string) {
  return db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select([
      "u.user_id",
      "u.approval",
      "u.media_type",
      "u.mime_type",
      "u.original_path",
      "u.preview_path",
      "u.display_path",
      "u.thumbnail_path",
    ])
    .where("u.id", "=", id)
    .where("u.deleted_at", "is", null)
    .where("us.is_banned", "=", 0)
    .where("us.uploads_hidden_at", "is", null)
    .executeTakeFirst();
}
