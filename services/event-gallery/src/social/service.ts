import { forbidden, notFound, validationFailed } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { AuthedUser, GalleryContext } from "../context.js";
import { bumpEpochIfReleased } from "../event/state.js";
import {
  listComments as commentRows,
  countLikes,
  findLiveComment,
  findVisibleUpload,
  insertComment,
  markCommentDeleted,
  setLikeRow,
  touchActivity,
} from "./repository.js";

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

/** What likes and comments need of the gallery context. */
export type SocialDeps = Pick<GalleryContext, "database" | "clock" | "limiter" | "bus">;

export type SocialService = ReturnType<typeof createSocialService>;

export function createSocialService(deps: SocialDeps) {
  async function spend(user: AuthedUser) {
    await deps.limiter.hit(`social:${user.id}`, SOCIAL_WRITES_PER_MIN, 60_000);
  }

  /** Idempotent: liking twice or unliking twice changes nothing the second time. */
  async function setLike(
    user: AuthedUser,
    uploadId: string,
    liked: boolean,
  ): Promise<{ liked: boolean; like_count: number }> {
    await spend(user);
    const { database, clock } = deps;
    const count = await database.writeTx(async (trx) => {
      if (!(await findVisibleUpload(trx, uploadId))) throw uploadNotFound();
      const now = clock.iso();
      if (await setLikeRow(trx, uploadId, user.id, liked, now)) await touchActivity(trx, uploadId, now);
      return countLikes(trx, uploadId);
    });
    deps.bus.publish("like", { upload_id: uploadId, like_count: count });
    return { liked, like_count: count };
  }

  /** Oldest first; comments by banned users are hidden. */
  async function listComments(uploadId: string): Promise<CommentView[]> {
    const { reader } = deps.database;
    if (!(await findVisibleUpload(reader, uploadId))) throw uploadNotFound();
    const rows = await commentRows(reader, uploadId);
    return rows.map((r) => ({
      id: r.id,
      upload_id: r.upload_id,
      user: { id: r.user_id, display_name: r.display_name },
      text: r.text,
      created_at: r.created_at,
    }));
  }

  async function addComment(user: AuthedUser, uploadId: string, rawText: string): Promise<CommentView> {
    const text = rawText.trim();
    if ([...text].length < 1 || [...text].length > COMMENT_MAX)
      throw validationFailed("text", `A comment must be 1 to ${COMMENT_MAX} characters.`);
    await spend(user);
    const { database, clock } = deps;
    const comment: CommentView = {
      id: newId(),
      upload_id: uploadId,
      user: { id: user.id, display_name: user.display_name },
      text,
      created_at: clock.iso(),
    };
    await database.writeTx(async (trx) => {
      if (!(await findVisibleUpload(trx, uploadId))) throw uploadNotFound();
      await insertComment(trx, {
        id: comment.id,
        upload_id: uploadId,
        user_id: user.id,
        text,
        created_at: comment.created_at,
      });
      await touchActivity(trx, uploadId, comment.created_at);
    });
    deps.bus.publish("comment-added", { upload_id: uploadId, comment_id: comment.id });
    return comment;
  }

  /** A guest deletes their own comment (the ban check already ran in auth, before ownership). */
  async function deleteOwnComment(user: AuthedUser, commentId: string): Promise<void> {
    await spend(user);
    const { database, clock } = deps;
    const uploadId = await database.writeTx(async (trx) => {
      const c = await findLiveComment(trx, commentId);
      if (!c || !(await findVisibleUpload(trx, c.upload_id))) throw notFound("No such comment.");
      if (c.user_id !== user.id) throw forbidden("You can only delete your own comments.", "not_owner");
      const now = clock.iso();
      await markCommentDeleted(trx, commentId, "owner", now);
      await touchActivity(trx, c.upload_id, now);
      await bumpEpochIfReleased(trx, clock);
      return c.upload_id;
    });
    deps.bus.publish("comment-removed", { upload_id: uploadId, comment_id: commentId });
  }

  return { setLike, listComments, addComment, deleteOwnComment };
}
