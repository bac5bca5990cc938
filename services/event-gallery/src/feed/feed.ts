import { toIso } from "@app/kit/clock";
import { validationFailed } from "@app/kit/errors";
import type { AuthedUser, GalleryContext } from "../context.js";
import type { LikedReader } from "./liked-batch.js";
import { type FeedPageCache, PageTemplate } from "./page-cache.js";
import * as repo from "./repository.js";
import { type FeedItem, itemIso, loadFeedItems } from "./serialize.js";
import { normalizeTagFilter } from "./tags.js";

export const FEED_LIMIT_DEFAULT = 30;
export const FEED_LIMIT_MAX = 100;
export const DELTA_LIMIT_DEFAULT = 100;
/** A delta cursor taken from the clock trails it by this much: a write whose timestamp was taken
 * just before the read but committed just after is still delivered (clients dedupe by id). */
export const DELTA_SETTLE_MS = 5_000;
const HIDDEN_USERS_CAP = 1_000;

/** Clamp at both ends; anything unparsable is the default. */
export function clampLimit(raw: string | undefined, def: number, max = FEED_LIMIT_MAX): number {
  const n = raw === undefined ? Number.NaN : Number.parseInt(raw, 10);
  if (!Number.isFinite(n)) return def;
  return Math.min(max, Math.max(1, n));
}

const encode = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
function decode(raw: string, field: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(raw, "base64url").toString("utf8"));
    if (
      Array.isArray(v) &&
      v.length === 2 &&
      typeof v[0] === "string" &&
      !Number.isNaN(Date.parse(v[0])) &&
      typeof v[1] === "string" &&
      v[1].length <= 64
    )
      return [toIso(Date.parse(v[0])), v[1]];
  } catch {}
  throw validationFailed(field, "The cursor is not one this server issued.");
}

export interface FeedQuery {
  limit?: string | undefined;
  cursor?: string | undefined;
  hashtag?: string | undefined;
  hashtags?: string | undefined;
  uploader?: string | undefined;
}

export interface FeedPage {
  items: FeedItem[];
  next_cursor: string | null;
  delta_cursor: string;
}

async function viewerOf(ctx: GalleryContext, user: AuthedUser) {
  return { id: user.id, mediaToken: await ctx.auth.mediaToken(user) };
}

const deltaCursorAt = (nowMs: number) => encode([toIso(nowMs - DELTA_SETTLE_MS), ""]);
/** A delta cursor from the server clock, for pages built outside readFeed. */
export const deltaCursorNow = (ctx: Pick<GalleryContext, "clock">) => deltaCursorAt(ctx.clock.now());

/**
 * GET /feed: newest first, keyset on (created_at, id), filters AND-ed. Answers the page as JSON
 * (the UTF-8 bytes of a FeedPage). The viewer-independent part comes from `pages` while the feed
 * stamp is the one it was built under (the stamp is read with the session, before the page); the
 * viewer's `liked_by_me` (one indexed read, also kept in `pages` per viewer while the stamp
 * stands), media token and delta cursor are filled in per request.
 */
export async function readFeed(
  ctx: GalleryContext,
  user: AuthedUser,
  query: FeedQuery,
  pages: FeedPageCache | null = null,
  likes: LikedReader | null = null,
): Promise<Buffer> {
  const settings = await ctx.settings.all();
  await ctx.limiter.hit(`feed:${user.id}`, settings.feed_rate_per_min, 60_000);
  const limit = clampLimit(query.limit, FEED_LIMIT_DEFAULT);
  const before = query.cursor ? decode(query.cursor, "cursor") : null;
  const now = ctx.clock.now();
  const deltaCursor = pages?.deltaCursor(now, deltaCursorAt) ?? deltaCursorAt(now);

  const tagsAny: string[][] = [];
  let impossible = false;
  if (query.hashtag !== undefined) {
    const tag = normalizeTagFilter(query.hashtag);
    if (tag) tagsAny.push([tag]);
    else impossible = true;
  }
  if (query.hashtags !== undefined) {
    const tags = query.hashtags
      .split(",")
      .map(normalizeTagFilter)
      .filter((t): t is string => t !== null);
    if (tags.length > 0) tagsAny.push([...new Set(tags)].slice(0, 30));
    else impossible = true;
  }
  if (impossible)
    return Buffer.from(JSON.stringify({ items: [], next_cursor: null, delta_cursor: deltaCursor }));

  const { reader } = ctx.database;
  const filter = { tagsAny, uploader: query.uploader ?? null };
  // The stamp must be read before the page statement runs (see FeedPageCache).
  const stamp = user.feedStamp ?? (await repo.feedStamp(reader));
  const key = JSON.stringify([limit, before, tagsAny, filter.uploader]);
  let page = pages?.get(stamp, key);
  if (!page) {
    const rows = await repo.feedItemsPage(
      reader,
      filter,
      before ? { created_at: before[0], id: before[1] } : null,
      limit + 1,
      "",
    );
    const shown = rows.slice(0, limit);
    const last = shown.at(-1);
    const next = rows.length > limit && last ? encode([itemIso(last.created_at), last.id]) : null;
    page = PageTemplate.of(shown, next);
    pages?.set(stamp, key, page);
  }
  // The viewer's likes on this page hold while the stamp stands (every like bumps it).
  let liked = pages?.likedOf(stamp, user.id, key);
  if (!liked) {
    liked = await (likes ? likes(user.id, page.ids) : repo.likedAmong(reader, user.id, page.ids));
    pages?.setLiked(stamp, user.id, key, liked);
  }
  // Favourites are private and change no page: read per request (one primary-key range read).
  const favorited = await repo.favoritedAmong(reader, user.id, page.ids);
  const token = await ctx.auth.mediaToken(user);
  return page.render(encodeURIComponent(token), liked, deltaCursor, favorited);
}

/** A place in a change stream: (changed_at, id), the order of both change indexes. */
interface Position {
  changed_at: string;
  id: string;
}
const before = (a: Position, b: Position) =>
  a.changed_at < b.changed_at || (a.changed_at === b.changed_at && a.id < b.id);

export interface FeedDelta {
  items: FeedItem[];
  changes: FeedItem[];
  removed_ids: string[];
  hidden_user_ids: string[];
  /** Users unbanned since the cursor; their visible uploads are in `changes`. */
  unhidden_user_ids: string[];
  cursor: string;
  has_more: boolean;
}

/**
 * GET /feed/delta: what changed since the cursor. New visible uploads go to `items`; edits,
 * finished derivatives and likes, unlikes and comment changes of older ones to `changes`;
 * deletions to `removed_ids`; bans to `hidden_user_ids`; unbans to `unhidden_user_ids` (with the
 * user's uploads in `changes`). At most `limit` changed uploads (plus at most `limit` with social
 * activity and `limit` of unbanned users) per call; `has_more` says to call again at once. Every
 * read is an index range over change times, so the cost follows the changes, not the event.
 */
export async function readDelta(
  ctx: GalleryContext,
  user: AuthedUser,
  query: { cursor?: string | undefined; limit?: string | undefined },
): Promise<FeedDelta> {
  const settings = await ctx.settings.all();
  await ctx.limiter.hit(`delta:${user.id}`, settings.delta_rate_per_min, 60_000);
  if (!query.cursor) throw validationFailed("cursor", "A cursor from /feed or a previous delta is required.");
  const [at, afterId] = decode(query.cursor, "cursor");
  const limit = clampLimit(query.limit, DELTA_LIMIT_DEFAULT);
  const settle = toIso(ctx.clock.now() - DELTA_SETTLE_MS);

  const { reader } = ctx.database;
  // Two change streams share one cursor: upload rows (created, edited, processed, deleted) and
  // social activity (likes and comments). Both are read past the cursor in (changed_at, id) order;
  // when either has more than `limit`, both are cut at the earlier of their last positions, so
  // nothing past the cut is skipped by the next call.
  const [rows, activity] = await Promise.all([
    repo.changesAfter(reader, at, afterId, limit + 1),
    repo.socialActivityAfter(reader, at, afterId, limit + 1),
  ]);
  const cuts = [rows, activity].filter((s) => s.length > limit).map((s) => s[limit - 1] as Position);
  const cut = cuts.reduce<Position | null>((a, b) => (a === null || before(b, a) ? b : a), null);
  const hasMore = cut !== null;
  const within = (p: Position) => cut === null || !before(cut, p);
  const page = rows.filter(within);
  const social = activity.filter(within);
  const newIds: string[] = [];
  const changedIds: string[] = [];
  const removed: string[] = [];
  for (const r of page) {
    if (r.deleted) removed.push(r.id);
    else if (!r.visible_uploader) continue;
    else if (r.created_at > at) newIds.push(r.id);
    else changedIds.push(r.id);
  }
  const viewer = await viewerOf(ctx, user);
  // Likes and comments change counts without touching the upload row.
  const seen = new Set(page.map((r) => r.id));
  const unhidden = await repo.unhiddenUsersSince(reader, at, HIDDEN_USERS_CAP);
  // An unbanned user's uploads come through the activity stream (the unban marks them changed).
  for (const id of social.map((a) => a.id))
    if (!seen.has(id)) {
      seen.add(id);
      changedIds.push(id);
    }
  const [items, changes, hidden] = await Promise.all([
    loadFeedItems(reader, newIds.reverse(), viewer),
    loadFeedItems(reader, changedIds, viewer),
    repo.hiddenUsersSince(reader, at, HIDDEN_USERS_CAP),
  ]);
  const last = [page.at(-1), social.at(-1)].reduce<Position | undefined>(
    (a, b) => (b === undefined || (a !== undefined && before(b, a)) ? a : b),
    undefined,
  );
  // Resume after the cut, after the last row returned, or (when caught up) from the settled clock.
  const cursor =
    cut !== null
      ? encode([cut.changed_at, cut.id])
      : last && last.changed_at > settle
        ? encode([last.changed_at, last.id])
        : settle > at
          ? encode([settle, ""])
          : query.cursor;
  return {
    items,
    changes,
    removed_ids: removed,
    hidden_user_ids: hidden,
    unhidden_user_ids: unhidden,
    cursor,
    has_more: hasMore,
  };
}

export async function listUploaders(ctx: GalleryContext) {
  return { uploaders: await repo.visibleUploaders(ctx.database.reader) };
}
