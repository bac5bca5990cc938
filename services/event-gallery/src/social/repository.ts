import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";
import { visibleUpload } from "../feed/visibility-repository.js";

/** Every SQL statement of likes and comments. */
type Db = Kysely<GalleryDB>;

/**
 * An upload anyone may see and interact with (the one visibility predicate); anything else is
 * answered as unknown (404).
 */
export function findVisibleUpload(db: Db, uploadId: string) {
  return db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select(["u.id", "u.user_id"])
    .where("u.id", "=", uploadId)
    .where(visibleUpload("u", "us"))
    .executeTakeFirst();
}

/** Likes on an upload, not counting banned users. */
export async function countLikes(db: Db, uploadId: string): Promise<number> {
  const row = await db
    .selectFrom("likes")
    .innerJoin("users", "users.id", "likes.user_id")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("likes.upload_id", "=", uploadId)
    .where("users.is_banned", "=", 0)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Insert or delete a like; true when a row actually changed. */
export async function setLikeRow(db: Db, uploadId: string, userId: string, liked: boolean, now: string) {
  const r = liked
    ? await db
        .insertInto("likes")
        .values({ upload_id: uploadId, user_id: userId, created_at: now })
        .onConflict((oc) => oc.columns(["upload_id", "user_id"]).doNothing())
        .executeTakeFirst()
    : await db
        .deleteFrom("likes")
        .where("upload_id", "=", uploadId)
        .where("user_id", "=", userId)
        .executeTakeFirst();
  const n = "numInsertedOrUpdatedRows" in r ? r.numInsertedOrUpdatedRows : r.numDeletedRows;
  return Number(n ?? 0) > 0;
}

/**
 * Record that an upload's likes or comments changed at `now`, in the writer's transaction: an
 * unlike or a comment removal leaves no row of its own, and /feed/delta reads this indexed time.
 */
export async function touchActivity(db: Db, uploadId: string, now: string): Promise<void> {
  await db
    .insertInto("upload_activity")
    .values({ upload_id: uploadId, changed_at: now })
    .onConflict((oc) => oc.column("upload_id").doUpdateSet({ changed_at: now }))
    .execute();
}

/**
 * A ban or unban changes the like and comment counts of every upload the user liked or commented
 * (banned users' likes and comments are not counted) and hides or shows the user's own uploads:
 * mark them all changed, in the ban's transaction.
 */
export async function touchActivityOfUser(db: Db, userId: string, now: string): Promise<number> {
  const rows = await db
    .selectFrom("likes")
    .select("upload_id")
    .where("user_id", "=", userId)
    .union(db.selectFrom("comments").select("upload_id").where("user_id", "=", userId))
    // The user's own uploads leave or rejoin the feed: the delta pages through them with the
    // activity stream (has_more and the cursor carry any number of them).
    .union(
      db
        .selectFrom("uploads")
        .select("id as upload_id")
        .where("user_id", "=", userId)
        .where("deleted_at", "is", null),
    )
    .execute();
  for (let i = 0; i < rows.length; i += 500) {
    await db
      .insertInto("upload_activity")
      .values(rows.slice(i, i + 500).map((r) => ({ upload_id: r.upload_id, changed_at: now })))
      .onConflict((oc) => oc.column("upload_id").doUpdateSet({ changed_at: now }))
      .execute();
  }
  return rows.length;
}

/** Live comments of an upload, oldest first; banned authors' comments are hidden. */
export function listComments(db: Db, uploadId: string) {
  return db
    .selectFrom("comments")
    .innerJoin("users as us", "us.id", "comments.user_id")
    .select([
      "comments.id",
      "comments.upload_id",
      "comments.text",
      "comments.created_at",
      "us.id as user_id",
      "us.display_name",
    ])
    .where("comments.upload_id", "=", uploadId)
    .where("comments.deleted_at", "is", null)
    .where("us.is_banned", "=", 0)
    .orderBy("comments.created_at")
    .orderBy("comments.id")
    .execute();
}

export async function insertComment(
  db: Db,
  c: { id: string; upload_id: string; user_id: string; text: string; created_at: string },
): Promise<void> {
  await db
    .insertInto("comments")
    .values({ ...c, deleted_at: null, deleted_by: null })
    .execute();
}

export function findLiveComment(db: Db, commentId: string) {
  return db
    .selectFrom("comments")
    .select(["id", "upload_id", "user_id"])
    .where("id", "=", commentId)
    .where("deleted_at", "is", null)
    .executeTakeFirst();
}

export async function markCommentDeleted(db: Db, commentId: string, by: "owner" | "host", now: string) {
  await db
    .updateTable("comments")
    .set({ deleted_at: now, deleted_by: by })
    .where("id", "=", commentId)
    .execute();
}
