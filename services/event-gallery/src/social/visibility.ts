import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/**
 * An upload anyone may see and interact with: not soft-deleted, uploader neither banned nor
 * hidden. Anything else is answered as unknown (404).
 */
export function findVisibleUpload(db: Kysely<GalleryDB>, uploadId: string) {
  return db
    .selectFrom("uploads")
    .innerJoin("users", "users.id", "uploads.user_id")
    .select(["uploads.id", "uploads.user_id"])
    .where("uploads.id", "=", uploadId)
    .where("uploads.deleted_at", "is", null)
    .where("users.is_banned", "=", 0)
    .where("users.uploads_hidden_at", "is", null)
    .executeTakeFirst();
}

/** Likes on an upload, not counting banned users. */
export async function countLikes(db: Kysely<GalleryDB>, uploadId: string): Promise<number> {
  const row = await db
    .selectFrom("likes")
    .innerJoin("users", "users.id", "likes.user_id")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("likes.upload_id", "=", uploadId)
    .where("users.is_banned", "=", 0)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
