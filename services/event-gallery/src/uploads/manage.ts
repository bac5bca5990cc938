import { forbidden, notFound } from "@app/kit/errors";
import type { AuthedUser, GalleryContext } from "../context.js";
import { bumpEpochIfReleased } from "../event/state.js";
import { type FeedItem, loadFeedItems } from "../feed/serialize.js";
import { normalizeHashtags } from "./hashtags.js";
import { validateCaption } from "./ingest.js";
import * as repo from "./repository.js";

/** Edits per user per minute (the seed asks for a limit; 30/min is far above human editing). */
export const EDIT_RATE_PER_MIN = 30;

export interface UploadEdit {
  caption?: string | undefined;
  hashtags?: string | string[] | undefined;
}

const notOwner = () => forbidden("Only the uploader can change or delete this upload.", "not_owner");

export type UploadManagerDeps = Pick<GalleryContext, "database" | "clock" | "limiter" | "bus" | "auth">;

export type UploadManager = ReturnType<typeof createUploadManager>;

/** The owner's edits and deletes of their own uploads. */
export function createUploadManager(deps: UploadManagerDeps) {
  async function liveUpload(id: string): Promise<repo.UploadRow> {
    const row = await repo.findUpload(deps.database.db, id);
    if (!row || row.deleted_at) throw notFound("No such upload.");
    return row;
  }

  /**
   * PATCH /upload/{id}: the owner edits caption and hashtags. Only an actual change writes, tells
   * clients, and (after release) bumps the export epoch in the same transaction.
   */
  async function editUpload(user: AuthedUser, id: string, edit: UploadEdit): Promise<FeedItem> {
    const caption = edit.caption === undefined ? undefined : validateCaption(edit.caption);
    const tags = edit.hashtags === undefined ? undefined : normalizeHashtags(edit.hashtags);
    await deps.limiter.hit(`upload-edit:${user.id}`, EDIT_RATE_PER_MIN, 60_000);
    const current = await liveUpload(id);
    if (current.user_id !== user.id) throw notOwner();

    const changed = await deps.database.writeTx(async (trx) => {
      const row = await repo.lockUploadRow(trx, deps.database.dialect, id);
      if (!row || row.deleted_at) throw notFound("No such upload.");
      const now = deps.clock.iso();
      let changed = false;
      if (caption !== undefined && caption !== row.caption) {
        await repo.updateCaption(trx, id, caption, now);
        changed = true;
      }
      if (tags !== undefined) {
        const before = await repo.tagsOf(trx, id);
        if (before.join(",") !== tags.join(",")) {
          await repo.replaceTags(trx, id, tags);
          await repo.touchUpload(trx, id, now);
          changed = true;
        }
      }
      if (changed) await bumpEpochIfReleased(trx, deps.clock);
      return changed;
    });
    if (changed) deps.bus.publish("upload-updated", { id, user_id: user.id });
    const [item] = await loadFeedItems(deps.database.db, [id], {
      id: user.id,
      mediaToken: await deps.auth.mediaToken(user),
    });
    if (!item) throw notFound("No such upload.");
    return item;
  }

  /**
   * DELETE /upload/{id}: the owner's own delete. Soft delete, quota refund (never below 0), the
   * idempotency key is released (the unique index ignores owner-deleted rows), epoch bump after
   * release in the same transaction.
   */
  async function deleteOwnUpload(user: AuthedUser, id: string): Promise<void> {
    const current = await liveUpload(id);
    if (current.user_id !== user.id) throw notOwner();
    const removed = await deps.database.writeTx(async (trx) => {
      const ok = await repo.softDeleteAndRefund(trx, current, "owner", deps.clock.iso());
      if (ok) await bumpEpochIfReleased(trx, deps.clock);
      return ok;
    });
    if (!removed) throw notFound("No such upload.");
    deps.bus.publish("upload-removed", { id, user_id: user.id });
  }

  return { editUpload, deleteOwnUpload };
}
