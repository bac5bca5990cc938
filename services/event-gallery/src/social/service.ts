import { forbidden, notFound, validationFailed } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { AuthedUser, GalleryContext } from "../context.js";
import { bumpEpochIfReleased } from "../event/state.js";
import { countLikes, findVisibleUpload } from "./visibility.js";

/** Likes, adding and deleting comments share one bucket per user. */
export const SOCIAL_WRITES_PER_MIN = 120;
export const COMMENT_MAX = 500;

export interface CommentView {
  id: string;
  upload_id: string;
  user: { id: string; display_name: string };
  text: string;
  created_at: string;
}

const uploadNotFound = () => notFound("No such upload.");

export class SocialService {
  constructor(private readonly ctx: GalleryContext) {}

  private spend(user: AuthedUser) {
    this.ctx.limiter.hit(`social:${user.id}`, SOCIAL_WRITES_PER_MIN, 60_000);
  }

  /** Idempotent: liking twice or unliking twice changes nothing the second time. */
  async setLike(
    user: AuthedUser,
    uploadId: string,
    liked: boolean,
  ): Promise<{ liked: boolean; like_count: number }> {
    this.spend(user);
    const { database, clock } = this.ctx;
    const count = await database.writeTx(async (trx) => {
      if (!(await findVisibleUpload(trx, uploadId))) throw uploadNotFound();
      if (liked)
        await trx
          .insertInto("likes")
          .values({ upload_id: uploadId, user_id: user.id, created_at: clock.iso() })
          .onConflict((oc) => oc.columns(["upload_id", "user_id"]).doNothing())
          .execute();
      else
        await trx
          .deleteFrom("likes")
          .where("upload_id", "=", uploadId)
          .where("user_id", "=", user.id)
          .execute();
      return countLikes(trx, uploadId);
    });
    this.ctx.bus.publish("like", { upload_id: uploadId, like_count: count });
    return { liked, like_count: count };
  }

  /** Oldest first; comments by banned users are hidden. */
  async listComments(uploadId: string): Promise<CommentView[]> {
    const { db } = this.ctx.database;
    if (!(await findVisibleUpload(db, uploadId))) throw uploadNotFound();
    const rows = await db
      .selectFrom("comments")
      .innerJoin("users", "users.id", "comments.user_id")
      .select([
        "comments.id",
        "comments.upload_id",
        "comments.text",
        "comments.created_at",
        "users.id as user_id",
        "users.display_name",
      ])
      .where("comments.upload_id", "=", uploadId)
      .where("comments.deleted_at", "is", null)
      .where("users.is_banned", "=", 0)
      .orderBy("comments.created_at")
      .orderBy("comments.id")
      .execute();
    return rows.map((r) => ({
      id: r.id,
      upload_id: r.upload_id,
      user: { id: r.user_id, display_name: r.display_name },
      text: r.text,
      created_at: r.created_at,
    }));
  }

  async addComment(user: AuthedUser, uploadId: string, rawText: string): Promise<CommentView> {
    const text = rawText.trim();
    if ([...text].length < 1 || [...text].length > COMMENT_MAX)
      throw validationFailed("text", `A comment must be 1 to ${COMMENT_MAX} characters.`);
    this.spend(user);
    const { database, clock } = this.ctx;
    const comment: CommentView = {
      id: newId(),
      upload_id: uploadId,
      user: { id: user.id, display_name: user.display_name },
      text,
      created_at: clock.iso(),
    };
    await database.writeTx(async (trx) => {
      if (!(await findVisibleUpload(trx, uploadId))) throw uploadNotFound();
      await trx
        .insertInto("comments")
        .values({
          id: comment.id,
          upload_id: uploadId,
          user_id: user.id,
          text,
          created_at: comment.created_at,
          deleted_at: null,
          deleted_by: null,
        })
        .execute();
    });
    this.ctx.bus.publish("comment-added", { upload_id: uploadId, comment_id: comment.id });
    return comment;
  }

  /** A guest deletes their own comment (the ban check already ran in auth, before ownership). */
  async deleteOwnComment(user: AuthedUser, commentId: string): Promise<void> {
    this.spend(user);
    const { database, clock } = this.ctx;
    const uploadId = await database.writeTx(async (trx) => {
      const c = await trx
        .selectFrom("comments")
        .select(["id", "upload_id", "user_id"])
        .where("id", "=", commentId)
        .where("deleted_at", "is", null)
        .executeTakeFirst();
      if (!c || !(await findVisibleUpload(trx, c.upload_id))) throw notFound("No such comment.");
      if (c.user_id !== user.id) throw forbidden("You can only delete your own comments.", "not_owner");
      await trx
        .updateTable("comments")
        .set({ deleted_at: clock.iso(), deleted_by: "owner" })
        .where("id", "=", commentId)
        .execute();
      await bumpEpochIfReleased(trx, clock);
      return c.upload_id;
    });
    this.ctx.bus.publish("comment-removed", { upload_id: uploadId, comment_id: commentId });
  }
}
