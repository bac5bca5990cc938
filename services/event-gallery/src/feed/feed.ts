import { toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { validationFailed } from "@app/kit/errors";
import type { AuthedUser, GalleryContext } from "../context.js";
import type { GalleryDB } from "../db/schema.js";
import { likedReader } from "./liked-batch.js";
import { SocialCounts, type Stamps, ViewerMasks } from "./overlay.js";
import { countsOfRows, type DeltaResume, JsonTemplate, PerMillisecond, StampedCache } from "./page-cache.js";
import type { ChangeRow, ItemRow } from "./repository.js";
import * as repo from "./repository.js";
import { type FeedItem, itemIso, loadItemRows } from "./serialize.js";
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

/**
 * A delta cursor taken from the clock: DELTA_SETTLE_MS behind it, rounded down to the second, so
 * the clients that ask within one second share the cursor and with it the cached delta.
 */
export const settledAt = (nowMs: number) => Math.floor((nowMs - DELTA_SETTLE_MS) / 1000) * 1000;
const deltaCursorAt = (nowMs: number) => encode([toIso(settledAt(nowMs)), ""]);
/** A delta cursor from the server clock, for pages built outside readFeed. */
export const deltaCursorNow = (ctx: Pick<GalleryContext, "clock">) => deltaCursorAt(ctx.clock.now());

/** The per-process caches of /feed and /feed/delta (one set per app instance). */
export interface FeedCaches {
  /** /feed pages under the feed stamp. */
  pages: StampedCache<JsonTemplate>;
  /** /feed/delta answers under both stamps. */
  deltas: StampedCache<{ template: JsonTemplate; resume: DeltaResume }>;
  /** A delta's upload changes, and item rows by id, under the feed stamp: a like rebuilds a delta
   * from these and one read of the social activity. */
  changes: StampedCache<ChangeRow[]>;
  rows: StampedCache<ItemRow>;
  counts: SocialCounts;
  masks: ViewerMasks;
  deltaCursor: PerMillisecond;
}

export function createFeedCaches(database: Pick<Database<GalleryDB>, "reader" | "dialect">): FeedCaches {
  const { reader } = database;
  return {
    pages: new StampedCache(false),
    deltas: new StampedCache(true),
    changes: new StampedCache(false),
    rows: new StampedCache(false, 5_000),
    counts: new SocialCounts(async (ids) => {
      const rows = await repo.countsOf(reader, ids);
      return new Map(rows.map((r) => [r.id, [Number(r.like_count ?? 0), Number(r.comment_count ?? 0)]]));
    }),
    // One reader per VIEWER_FIELDS entry, in its order.
    masks: new ViewerMasks([
      likedReader(database),
      (viewer, ids) => repo.favoritedAmong(reader, viewer, ids),
    ]),
    deltaCursor: new PerMillisecond(deltaCursorAt),
  };
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

/** What /feed, /feed/delta and /uploaders need of the gallery context. */
export type FeedDeps = Pick<GalleryContext, "database" | "settings" | "limiter" | "clock" | "auth">;

export type FeedService = ReturnType<typeof createFeedService>;

export function createFeedService(deps: FeedDeps) {
  // This app's feed pages, deltas and overlay sources (one set per app instance, checked against
  // the database's stamps).
  const caches = createFeedCaches(deps.database);

  /** The stamps the session read brought, else read now (before any template statement). */
  const stampsOf = async (user: AuthedUser) => user.stamps ?? (await repo.feedStamps(deps.database.reader));

  /** The overlay of `template` for `user`: counts, per-viewer fields and the media token. */
  async function renderFor(
    user: AuthedUser,
    stamps: Stamps,
    template: JsonTemplate,
    cursors: string[],
  ): Promise<Buffer> {
    const [counts, masks, token] = await Promise.all([
      caches.counts.of(stamps, template.ids),
      caches.masks.of(user.id, user.viewerRev, template.ids),
      deps.auth.mediaToken(user),
    ]);
    return template.render({ token: encodeURIComponent(token), cursors, counts, masks });
  }

  /**
   * GET /feed: newest first, keyset on (created_at, id), filters AND-ed. Answers the page as JSON
   * (the UTF-8 bytes of a FeedPage). The page's items come from `caches.pages` while the feed stamp
   * is the one it was built under (the stamps are read with the session, before the page); counts,
   * `liked_by_me`, the media token and the delta cursor are filled in per request (overlay.ts), so
   * likes and comments never discard the page.
   */
  async function readFeed(user: AuthedUser, query: FeedQuery): Promise<Buffer> {
    const settings = await deps.settings.all();
    await deps.limiter.hit(`feed:${user.id}`, settings.feed_rate_per_min, 60_000);
    const limit = clampLimit(query.limit, FEED_LIMIT_DEFAULT);
    const before = query.cursor ? decode(query.cursor, "cursor") : null;
    const deltaCursor = caches.deltaCursor.at(deps.clock.now());

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

    const { reader } = deps.database;
    const filter = { tagsAny, uploader: query.uploader ?? null };
    const stamps = await stampsOf(user);
    const key = JSON.stringify([limit, before, tagsAny, filter.uploader]);
    // A guest with pending uploads of their own sees them in place (issue 27): that page is theirs
    // alone, built for the request and not kept.
    const own = user.hasPending === true;
    const build = async () => {
      const rows = await repo.feedItemsPage(
        reader,
        own ? { ...filter, ownPending: user.id } : filter,
        before ? { created_at: before[0], id: before[1] } : null,
        limit + 1,
        "",
      );
      const shown = rows.slice(0, limit);
      const last = shown.at(-1);
      const next = rows.length > limit && last ? encode([itemIso(last.created_at), last.id]) : null;
      caches.counts.seed(stamps, countsOfRows(shown));
      return JsonTemplate.builder()
        .lit('{"items":')
        .items(shown)
        .lit(`,"next_cursor":${JSON.stringify(next)},"delta_cursor":"`)
        .cursor(0)
        .lit('"}')
        .done();
    };
    const page = own ? await build() : await caches.pages.get(stamps, key, build);
    return renderFor(user, stamps, page, [deltaCursor]);
  }

  /**
   * GET /feed/delta: what changed since the cursor, as JSON bytes of a FeedDelta. New visible
   * uploads go to `items`; edits, finished derivatives and likes, unlikes and comment changes of
   * older ones to `changes`; deletions to `removed_ids`; bans to `hidden_user_ids`; unbans to
   * `unhidden_user_ids` (with the user's uploads in `changes`). At most `limit` changed uploads
   * (plus at most `limit` with social activity and `limit` of unbanned users) per call; `has_more`
   * says to call again at once. Every read is an index range over change times, so the cost follows
   * the changes, not the event. The answer for a (cursor, limit) is kept in `caches.deltas` while
   * both stamps stand; the overlay and the resume cursor are filled in per request, as for /feed.
   */
  async function readDelta(
    user: AuthedUser,
    query: { cursor?: string | undefined; limit?: string | undefined },
  ): Promise<Buffer> {
    const settings = await deps.settings.all();
    await deps.limiter.hit(`delta:${user.id}`, settings.delta_rate_per_min, 60_000);
    if (!query.cursor)
      throw validationFailed("cursor", "A cursor from /feed or a previous delta is required.");
    const [at, afterId] = decode(query.cursor, "cursor");
    const limit = clampLimit(query.limit, DELTA_LIMIT_DEFAULT);
    const stamps = await stampsOf(user);
    const key = JSON.stringify([at, afterId, limit]);
    const entry = await caches.deltas.get(stamps, key, () => buildDelta(stamps, at, afterId, limit));
    // Resume after the cut, after the last row returned, or (when caught up) from the settled clock.
    const { resume } = entry;
    const settle = toIso(settledAt(deps.clock.now()));
    const cursor =
      resume.cut ??
      (resume.last && resume.last.changed_at > settle
        ? resume.last.cursor
        : settle > at
          ? caches.deltaCursor.at(deps.clock.now())
          : query.cursor);
    return renderFor(user, stamps, entry.template, [cursor]);
  }

  /** Item rows of `ids` in that order (those that no longer exist skipped), from `caches.rows` where kept. */
  async function itemRows(stamps: Stamps, ids: readonly string[]) {
    const found = new Map<string, ItemRow>();
    const missing: string[] = [];
    let gen = -1;
    for (const id of ids) {
      const l = caches.rows.lookup(stamps, id);
      gen = l.gen;
      if (l.hit) found.set(id, l.hit);
      else missing.push(id);
    }
    for (const r of await loadItemRows(deps.database.reader, missing, "")) {
      found.set(r.id, r);
      caches.rows.store(gen, r.id, r);
    }
    return ids.map((id) => found.get(id)).filter((r): r is ItemRow => r !== undefined);
  }

  /** The viewer-independent part of a delta (see readDelta). */
  async function buildDelta(stamps: Stamps, at: string, afterId: string, limit: number) {
    const { reader } = deps.database;
    // Two change streams share one cursor: upload rows (created, edited, processed, deleted) and
    // social activity (likes and comments). Both are read past the cursor in (changed_at, id) order;
    // when either has more than `limit`, both are cut at the earlier of their last positions, so
    // nothing past the cut is skipped by the next call.
    const [rows, activity] = await Promise.all([
      caches.changes.get(stamps, JSON.stringify([at, afterId, limit]), () =>
        repo.changesAfter(reader, at, afterId, limit + 1),
      ),
      repo.socialActivityAfter(reader, at, afterId, limit + 1),
    ]);
    const cuts = [rows, activity].filter((s) => s.length > limit).map((s) => s[limit - 1] as Position);
    const cut = cuts.reduce<Position | null>((a, b) => (a === null || before(b, a) ? b : a), null);
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
    // Likes and comments change counts without touching the upload row.
    const seen = new Set(page.map((r) => r.id));
    // An unbanned user's uploads come through the activity stream (the unban marks them changed).
    for (const id of social.map((a) => a.id))
      if (!seen.has(id)) {
        seen.add(id);
        changedIds.push(id);
      }
    const [items, changes, hidden, unhidden] = await Promise.all([
      itemRows(stamps, newIds.reverse()),
      itemRows(stamps, changedIds),
      repo.hiddenUsersSince(reader, at, HIDDEN_USERS_CAP),
      repo.unhiddenUsersSince(reader, at, HIDDEN_USERS_CAP),
    ]);
    const last = [page.at(-1), social.at(-1)].reduce<Position | undefined>(
      (a, b) => (b === undefined || (a !== undefined && before(b, a)) ? a : b),
      undefined,
    );
    const template = JsonTemplate.builder()
      .lit('{"items":')
      .items(items)
      .lit(',"changes":')
      .items(changes)
      .lit(
        `,"removed_ids":${JSON.stringify(removed)},"hidden_user_ids":${JSON.stringify(hidden)},"unhidden_user_ids":${JSON.stringify(unhidden)},"cursor":"`,
      )
      .cursor(0)
      .lit(`","has_more":${cut !== null}}`)
      .done();
    const resume: DeltaResume = {
      cut: cut ? encode([cut.changed_at, cut.id]) : null,
      last: last ? { changed_at: last.changed_at, cursor: encode([last.changed_at, last.id]) } : null,
    };
    return { template, resume };
  }

  async function listUploaders() {
    return { uploaders: await repo.visibleUploaders(deps.database.reader) };
  }

  return { readFeed, readDelta, listUploaders };
}
