import { conflict, notFound, validationFailed } from "@app/kit/errors";
import { recordAudit } from "../audit/repository.js";
import type { AuthedUser, GalleryContext } from "../context.js";
import { bumpEpochIfReleased } from "../event/state.js";
import { clampLimit, FEED_LIMIT_DEFAULT } from "../feed/feed.js";
import { decodePageKey, encodePageKey } from "../feed/page-key.js";
import { type FeedItem, loadFeedItems } from "../feed/serialize.js";
import * as repo from "./repository.js";

/**
 * Pre-moderation (contract "Hosts and guests"): hosts list pending uploads oldest first, approve
 * (the upload joins the feed, everyone hears `new-upload`) or reject (a takedown: the idempotency
 * key stays claimed). Also the guest's own list, where pending uploads show as such.
 */

/** Ids one bulk approval may name (contract "Live event"). */
export const BULK_APPROVE_MAX = 200;

export interface Page {
  items: FeedItem[];
  next_cursor: string | null;
}

async function page(
  ctx: Pick<GalleryContext, "database" | "auth">,
  user: AuthedUser,
  query: { limit?: string | undefined; cursor?: string | undefined },
  keysOf: (cursor: repo.PageKey | null, limit: number) => Promise<repo.PageKey[]>,
): Promise<Page> {
  const limit = clampLimit(query.limit, FEED_LIMIT_DEFAULT);
  const keys = await keysOf(query.cursor ? decodePageKey(query.cursor) : null, limit + 1);
  const shown = keys.slice(0, limit);
  const items = await loadFeedItems(
    ctx.database.db,
    shown.map((k) => k.id),
    { id: user.id, mediaToken: await ctx.auth.mediaToken(user) },
  );
  const last = shown.at(-1);
  return { items, next_cursor: keys.length > limit && last ? encodePageKey(last) : null };
}

/** What a rejection needs from moderation: the host takedown (the ModerationService app.ts passes in). */
export interface Takedowns {
  takedownUpload(actor: AuthedUser, uploadId: string, action: "reject_upload"): Promise<void>;
}

/** What pre-moderation needs: parts of the gallery context and the host takedown. */
export type PremoderationDeps = Pick<
  GalleryContext,
  "database" | "clock" | "auth" | "bus" | "settings" | "limiter"
> & {
  moderation: Takedowns;
};

export type PremoderationService = ReturnType<typeof createPremoderationService>;

export function createPremoderationService(deps: PremoderationDeps) {
  /** GET /feed?mine=1: the caller's own live uploads, newest first, pending ones included. */
  async function readMine(
    user: AuthedUser,
    query: { limit?: string | undefined; cursor?: string | undefined },
  ): Promise<Page> {
    const settings = await deps.settings.all();
    await deps.limiter.hit(`feed:${user.id}`, settings.feed_rate_per_min, 60_000);
    return page(deps, user, query, (before, limit) => repo.ownPage(deps.database.db, user.id, before, limit));
  }

  /** GET /host/pending: oldest first, so the queue is worked in arrival order. */
  function listPending(user: AuthedUser, query: { limit?: string | undefined; cursor?: string | undefined }) {
    return page(deps, user, query, (after, limit) => repo.pendingPage(deps.database.db, after, limit));
  }

  function countPending(): Promise<number> {
    return repo.countPending(deps.database.db);
  }

  /** Approve a pending upload; approving an approved one changes nothing and answers it again. */
  async function approve(actor: AuthedUser, uploadId: string): Promise<FeedItem> {
    const { database, clock } = deps;
    const approved = await database.writeTx(async (trx) => {
      const row = await repo.lockLiveUpload(trx, database.dialect, uploadId);
      if (!row) throw notFound("No such upload.");
      if (row.approval !== "pending") return null;
      const now = clock.iso();
      await repo.markApproved(trx, uploadId, now);
      // An upload approved after the release joins the keepsake: rebuild it.
      await bumpEpochIfReleased(trx, clock);
      await recordAudit(trx, database, {
        actorId: actor.id,
        action: "approve_upload",
        targetType: "upload",
        targetId: uploadId,
        at: now,
        details: { uploader_id: row.user_id },
      });
      return row;
    });
    if (approved) deps.bus.publish("new-upload", { id: uploadId, user_id: approved.user_id });
    const [item] = await loadFeedItems(database.db, [uploadId], {
      id: actor.id,
      mediaToken: await deps.auth.mediaToken(actor),
    });
    if (!item) throw notFound("No such upload.");
    return item;
  }

  /**
   * POST /host/pending:approve: the listed pending uploads (at most BULK_APPROVE_MAX), or every one
   * the queue holds, approved in one transaction (one audit entry each); each joins the feed with
   * its `new-upload` event. Unknown, removed and already approved ids are skipped, not refused, so
   * a host working from a stale list (another host was quicker) gets the rest approved.
   */
  async function approveMany(
    actor: AuthedUser,
    which: { ids: readonly string[] } | { all: true },
  ): Promise<number> {
    const { database, clock } = deps;
    const ids = "ids" in which ? [...new Set(which.ids)] : null;
    if (ids !== null && ids.length > BULK_APPROVE_MAX)
      throw validationFailed("ids", `At most ${BULK_APPROVE_MAX} ids per request.`);
    const approved = await database.writeTx(async (trx) => {
      const now = clock.iso();
      const rows = await repo.approvePending(trx, ids, now);
      if (rows.length > 0) await bumpEpochIfReleased(trx, clock);
      for (const row of rows)
        await recordAudit(trx, database, {
          actorId: actor.id,
          action: "approve_upload",
          targetType: "upload",
          targetId: row.id,
          at: now,
          details: { uploader_id: row.user_id, bulk: true },
        });
      return rows;
    });
    for (const row of approved) deps.bus.publish("new-upload", { id: row.id, user_id: row.user_id });
    return approved.length;
  }

  /** Reject = host takedown of a pending upload (the idempotency key stays claimed). */
  async function reject(actor: AuthedUser, uploadId: string): Promise<void> {
    const row = await repo.liveUpload(deps.database.db, uploadId);
    if (!row) throw notFound("No such upload.");
    if (row.approval !== "pending")
      throw conflict("not_pending", "This upload is already approved; remove it from the feed instead.");
    await deps.moderation.takedownUpload(actor, uploadId, "reject_upload");
  }

  return { readMine, listPending, countPending, approve, approveMany, reject };
}
