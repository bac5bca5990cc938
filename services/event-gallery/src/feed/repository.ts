import {
  type ExpressionBuilder,
  isPostgres,
  type Kysely,
  preparedQuery,
  type SqlBool,
  sql,
} from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";
import { visibleUpload, visibleUploader } from "./visibility-repository.js";

/** Every SQL statement of the feed read model. Hot paths pass `database.reader`. */
type Db = Kysely<GalleryDB>;

export interface FeedFilter {
  /** Any of these tags (a single `hashtag` is a one-element list). */
  tagsAny: string[][];
  uploader: string | null;
  /** Also this user's own pending uploads, in their place (a guest's own /feed, issue 27). */
  ownPending?: string | null;
}

export interface FeedKey {
  created_at: string;
  id: string;
}

/**
 * One feed page: visible uploads newest first, strictly before `before` (a row-value keyset, which
 * both backends answer by walking the (created_at, id) index backwards and stopping at `limit`),
 * with every column of the item (counts, the viewer's like and the tags as subqueries evaluated
 * for the returned rows only). One statement, compiled once per filter shape and prepared.
 */
export async function feedItemsPage(
  db: Db,
  filter: FeedFilter,
  before: FeedKey | null,
  limit: number,
  viewerId: string,
): Promise<ItemRow[]> {
  const params: Record<string, unknown> = { viewer: viewerId, limit };
  filter.tagsAny.forEach((tags, i) => {
    params[`tags${i}`] = arrayParam(db, tags);
  });
  if (filter.uploader !== null) params.uploader = filter.uploader;
  if (filter.ownPending) params.ownPending = filter.ownPending;
  if (before) {
    params.beforeAt = before.created_at;
    params.beforeId = before.id;
  }
  const shape = `${filter.tagsAny.length}|${filter.uploader !== null}|${before !== null}|${!!filter.ownPending}`;
  return pageStatement(db, params, shape);
}

// Built from the placeholders: `tagsN` (one array value per tag group), `uploader`, `beforeAt`
// and `beforeId` are present exactly when the shape has them.
const pageStatement = preparedQuery((db: Db, p: Record<string, unknown>) =>
  feedPageQuery(
    db,
    {
      tagsAny: Object.keys(p)
        .filter((k) => /^tags\d+$/.test(k))
        .map((k) => p[k]),
      uploader: "uploader" in p ? (p.uploader as string) : null,
      ownPending: "ownPending" in p ? (p.ownPending as string) : null,
    },
    "beforeAt" in p ? { created_at: p.beforeAt as string, id: p.beforeId as string } : null,
    p.limit as number,
    p.viewer as string,
  ),
);

/**
 * The feed page statement itself (tests read its plan). Each `tagsAny` entry is one bound list
 * (`arrayParam`), as feedItemsPage passes it.
 */
export function feedPageQuery(
  db: Db,
  filter: { tagsAny: readonly unknown[]; uploader: string | null; ownPending?: string | null },
  before: FeedKey | null,
  limit: number,
  viewerId = "",
) {
  const own = filter.ownPending;
  let q = itemQuery(db, viewerId).where(
    own
      ? sql<SqlBool>`(${visibleUpload("u", "us")} OR (u.user_id = ${own} AND u.approval = 'pending' AND u.deleted_at IS NULL AND ${visibleUploader("us")}))`
      : visibleUpload("u", "us"),
  );
  // Each entry of tagsAny is one AND-ed condition whose tags are OR-ed (one array value each, so
  // the statement text does not depend on how many tags there are).
  for (const tags of filter.tagsAny) {
    q = q.where(({ exists, selectFrom }) =>
      exists(
        selectFrom("upload_hashtags as h")
          .select("h.upload_id")
          .whereRef("h.upload_id", "=", "u.id")
          .where(inArray(db, "h.tag", tags)),
      ),
    );
  }
  if (filter.uploader !== null) q = q.where("us.display_name", "=", filter.uploader);
  if (before)
    q = q.where((eb) => eb(eb.refTuple("u.created_at", "u.id"), "<", eb.tuple(before.created_at, before.id)));
  return q.orderBy("u.created_at", "desc").orderBy("u.id", "desc").limit(limit);
}

export interface ChangeRow {
  id: string;
  user_id: string;
  created_at: string;
  deleted: boolean;
  visible_uploader: boolean;
  changed_at: string;
}

/**
 * Uploads that changed (created, edited, processed, deleted) after (at, id), oldest change first:
 * a range read of the (changed_at, id) index, so the cost follows the number of changes.
 */
export async function changesAfter(db: Db, at: string, afterId: string, limit: number): Promise<ChangeRow[]> {
  const rows = await changesStatement(db, { at, afterId, limit });
  return rows.map((r) => ({
    id: r.id,
    user_id: r.user_id,
    created_at: isoOf(r.created_at),
    deleted: r.deleted_at !== null,
    // A pending upload (pre-moderation) is invisible like a hidden uploader's (issue 14).
    visible_uploader: r.is_banned === 0 && r.uploads_hidden_at === null && r.approval === "approved",
    changed_at: isoOf(r.changed_at),
  }));
}

const changesStatement = preparedQuery((db: Db, p: { at: string; afterId: string; limit: number }) =>
  changesAfterQuery(db, p.at, p.afterId, p.limit),
);

export function changesAfterQuery(db: Db, at: string, afterId: string, limit: number) {
  return db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select([
      "u.id",
      "u.user_id",
      "u.created_at",
      "u.deleted_at",
      "u.changed_at",
      "u.approval",
      "us.is_banned",
      "us.uploads_hidden_at",
    ])
    .where((eb) => eb(eb.refTuple("u.changed_at", "u.id"), ">", eb.tuple(at, afterId)))
    .orderBy("u.changed_at")
    .orderBy("u.id")
    .limit(limit);
}

/**
 * Visible uploads from before `at` whose likes or comments changed after (at, afterId) (like,
 * unlike, new or deleted comment), oldest activity first: their counts changed. A range read of
 * the (changed_at, upload_id) activity index, keyed like changesAfter so one cursor walks both.
 */
export async function socialActivityAfter(
  db: Db,
  at: string,
  afterId: string,
  limit: number,
): Promise<{ id: string; changed_at: string }[]> {
  const rows = await socialStatement(db, { at, afterId, limit });
  return rows.map((r) => ({ id: r.id, changed_at: isoOf(r.changed_at) }));
}

const socialStatement = preparedQuery((db: Db, p: { at: string; afterId: string; limit: number }) =>
  socialActivityQuery(db, p.at, p.afterId, p.limit),
);

export function socialActivityQuery(db: Db, at: string, afterId: string, limit: number) {
  // CROSS JOIN keeps SQLite's planner on the activity index as the outer loop (it would otherwise
  // scan uploads); PostgreSQL plans it as the inner join it is.
  return db
    .selectFrom("upload_activity as a")
    .crossJoin("uploads as u")
    .crossJoin("users as us")
    .whereRef("u.id", "=", "a.upload_id")
    .whereRef("us.id", "=", "u.user_id")
    .select(["a.upload_id as id", "a.changed_at"])
    .where((eb) => eb(eb.refTuple("a.changed_at", "a.upload_id"), ">", eb.tuple(at, afterId)))
    .where("u.created_at", "<=", at)
    .where(visibleUpload("u", "us"))
    .orderBy("a.changed_at")
    .orderBy("a.upload_id")
    .limit(limit);
}

/** Users hidden (banned) after `at`; capped, since a reconnecting client needs only recent ones. */
export async function hiddenUsersSince(db: Db, at: string, cap: number): Promise<string[]> {
  const rows = await hiddenStatement(db, { at, cap });
  return rows.map((r) => r.id);
}

const hiddenStatement = preparedQuery((db: Db, p: { at: string; cap: number }) =>
  db
    .selectFrom("users")
    .select("id")
    .where("uploads_hidden_at", ">", p.at)
    .orderBy("uploads_hidden_at")
    .limit(p.cap),
);

/** Users unbanned after `at` and still visible; capped like hiddenUsersSince. */
export async function unhiddenUsersSince(db: Db, at: string, cap: number): Promise<string[]> {
  const rows = await unhiddenStatement(db, { at, cap });
  return rows.map((r) => r.id);
}

const unhiddenStatement = preparedQuery((db: Db, p: { at: string; cap: number }) =>
  db
    .selectFrom("users")
    .select("id")
    .where("unhidden_at", ">", p.at)
    .where("is_banned", "=", 0)
    .where("uploads_hidden_at", "is", null)
    .orderBy("unhidden_at")
    .limit(p.cap),
);

export async function visibleUploaders(
  db: Db,
): Promise<{ id: string; display_name: string; upload_count: number }[]> {
  const rows = await db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select(["us.id", "us.display_name", "us.display_name_key", (eb) => eb.fn.count<number>("u.id").as("n")])
    .where(visibleUpload("u", "us"))
    .groupBy(["us.id", "us.display_name", "us.display_name_key"])
    .orderBy("us.display_name_key")
    .execute();
  return rows.map((r) => ({ id: r.id, display_name: r.display_name, upload_count: Number(r.n) }));
}

/**
 * A feed item's columns: the upload, its uploader's name, like and comment counts that leave out
 * banned users' rows, whether the viewer liked it, and its tags (comma-joined: tags are
 * ASCII letters, digits and underscores; unsorted).
 */
function itemQuery(db: Db, viewerId: string) {
  // Unordered (an ordered aggregate sorts for every row): the caller sorts the few tags.
  const agg = isPostgres(db) ? sql`string_agg(h.tag, ',')` : sql`group_concat(h.tag, ',')`;
  const tags = sql<string | null>`(select ${agg} from upload_hashtags h where h.upload_id = u.id)`;
  return db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select((eb) => [
      "u.id",
      "u.user_id",
      "us.display_name",
      "u.caption",
      "u.media_type",
      "u.mime_type",
      "u.created_at",
      "u.updated_at",
      "u.compression_status",
      "u.width",
      "u.height",
      "u.duration_s",
      "u.original_path",
      "u.preview_path",
      "u.display_path",
      "u.thumbnail_path",
      "u.approval",
      "u.highlighted_at",
      ...countColumns(eb),
      eb
        .exists(
          eb
            .selectFrom("likes as ml")
            .select("ml.upload_id")
            .whereRef("ml.upload_id", "=", "u.id")
            .where("ml.user_id", "=", viewerId),
        )
        .as("liked_by_me"),
      eb
        .exists(
          eb
            .selectFrom("favorites as mf")
            .select("mf.upload_id")
            .whereRef("mf.upload_id", "=", "u.id")
            .where("mf.user_id", "=", viewerId),
        )
        .as("favorited_by_me"),
      tags.as("tags"),
    ]);
}

/**
 * Like and comment counts of `u` that leave out banned users' rows. NOT IN an uncorrelated list of
 * banned users (computed once per statement; ids are never null): a join to users lets SQLite scan
 * users for every upload.
 */
function countColumns(eb: ExpressionBuilder<GalleryDB & { u: GalleryDB["uploads"] }, "u">) {
  const banned = eb.selectFrom("users as b").select("b.id").where("b.is_banned", "=", 1);
  return [
    eb
      .selectFrom("likes as l")
      .select((e) => e.fn.countAll<number>().as("n"))
      .whereRef("l.upload_id", "=", "u.id")
      .where("l.user_id", "not in", banned)
      .as("like_count"),
    eb
      .selectFrom("comments as c")
      .select((e) => e.fn.countAll<number>().as("n"))
      .whereRef("c.upload_id", "=", "u.id")
      .where("c.deleted_at", "is", null)
      .where("c.user_id", "not in", banned)
      .as("comment_count"),
  ] as const;
}

/** Like and comment counts (banned users' rows left out) of `ids`: the overlay's counts source. */
export function countsOf(
  db: Db,
  ids: readonly string[],
): Promise<{ id: string; like_count: number | string | null; comment_count: number | string | null }[]> {
  return countsStatement(db, { ids: arrayParam(db, ids) });
}

const countsStatement = preparedQuery((db: Db, p: { ids: unknown }) =>
  db
    .selectFrom("uploads as u")
    .select((eb) => ["u.id", ...countColumns(eb)])
    .where(inArray(db, "u.id", p.ids)),
);

export type ItemRow = Awaited<ReturnType<ReturnType<typeof itemQuery>["execute"]>>[number];

/**
 * Feed item rows for `ids` (any order): one statement for any number of ids (bound as one array
 * value), compiled once and prepared.
 */
export function feedItemRows(db: Db, ids: readonly string[], viewerId: string): Promise<ItemRow[]> {
  return itemsStatement(db, { viewer: viewerId, ids: arrayParam(db, ids) });
}

const itemsStatement = preparedQuery((db: Db, p: { viewer: string; ids: unknown }) =>
  itemQuery(db, p.viewer).where(inArray(db, "u.id", p.ids)),
);

/** A list of strings bound as ONE value: a text[] on PostgreSQL, a JSON array on SQLite. */
export const arrayParam = (db: Db, values: readonly string[]): unknown =>
  isPostgres(db) ? [...values] : JSON.stringify(values);

/** `ref IN (the list bound by arrayParam)`. */
export const inArray = (db: Db, ref: string, list: unknown) =>
  isPostgres(db)
    ? sql<SqlBool>`${sql.ref(ref)} = any(${list}::text[])`
    : sql<SqlBool>`${sql.ref(ref)} in (select value from json_each(${list}))`;

const isoOf = (v: unknown) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());

/**
 * The feed stamp (migration 010: bumped by trigger in every transaction that changes what a page
 * lists) and the social stamp (migration 011: likes and comments), in one statement.
 */
export async function feedStamps(db: Db): Promise<{ feed: number; social: number }> {
  const [row] = await stampStatement(db, {});
  return { feed: Number(row?.feed ?? 0), social: Number(row?.social ?? 0) };
}

const stampStatement = preparedQuery((db: Db, _p: Record<string, never>) =>
  db
    .selectFrom("feed_stamp as f")
    .crossJoin("social_stamp as s")
    .select(["f.n as feed", "s.n as social"])
    .where("f.id", "=", 1)
    .where("s.id", "=", 1),
);

/** Which of `ids` the viewer liked (the per-viewer part of a cached page). One prepared statement. */
export async function likedAmong(db: Db, viewerId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await likedStatement(db, { viewer: viewerId, ids: arrayParam(db, ids) });
  return new Set(rows.map((r) => r.upload_id));
}

const likedStatement = preparedQuery((db: Db, p: { viewer: string; ids: unknown }) =>
  db
    .selectFrom("likes as l")
    .select("l.upload_id")
    .where("l.user_id", "=", p.viewer)
    .where(inArray(db, "l.upload_id", p.ids)),
);

/** Which of `ids` the viewer starred (issue 27): a per-viewer overlay field (overlay.ts). */
export async function favoritedAmong(db: Db, viewerId: string, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await favoritedStatement(db, { viewer: viewerId, ids: arrayParam(db, ids) });
  return new Set(rows.map((r) => r.upload_id));
}

const favoritedStatement = preparedQuery((db: Db, p: { viewer: string; ids: unknown }) =>
  db
    .selectFrom("favorites as f")
    .select("f.upload_id")
    .where("f.user_id", "=", p.viewer)
    .where(inArray(db, "f.upload_id", p.ids)),
);

/**
 * Likes of any of `viewers` on any of `ids`: the union of several viewers' `likedAmong` reads in
 * one statement (a superset of each one's pairs; the caller keeps each viewer's own).
 */
export async function likedPairs(
  db: Db,
  viewers: readonly string[],
  ids: readonly string[],
): Promise<{ user_id: string; upload_id: string }[]> {
  if (viewers.length === 0 || ids.length === 0) return [];
  return likedPairsStatement(db, { viewers: arrayParam(db, viewers), ids: arrayParam(db, ids) });
}

const likedPairsStatement = preparedQuery((db: Db, p: { viewers: unknown; ids: unknown }) =>
  db
    .selectFrom("likes as l")
    .select(["l.user_id", "l.upload_id"])
    .where(inArray(db, "l.user_id", p.viewers))
    .where(inArray(db, "l.upload_id", p.ids)),
);
