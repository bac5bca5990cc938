import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";
import { visibleUpload } from "./visibility.js";

/** Every SQL statement of the feed read model. Hot paths pass `database.reader`. */
type Db = Kysely<GalleryDB>;

export interface FeedFilter {
  /** Any of these tags (a single `hashtag` is a one-element list). */
  tagsAny: string[][];
  uploader: string | null;
}

export interface FeedKey {
  created_at: string;
  id: string;
}

/**
 * Visible uploads, newest first, strictly before `before` (a row-value keyset, which both
 * backends answer by walking the (created_at, id) index backwards and stopping at `limit`).
 */
export async function feedPage(
  db: Db,
  filter: FeedFilter,
  before: FeedKey | null,
  limit: number,
): Promise<FeedKey[]> {
  const rows = await feedPageQuery(db, filter, before, limit).execute();
  return rows.map((r) => ({ id: r.id, created_at: isoOf(r.created_at) }));
}

/** The query itself (tests read its plan). */
export function feedPageQuery(db: Db, filter: FeedFilter, before: FeedKey | null, limit: number) {
  let q = db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select(["u.id", "u.created_at"])
    .where(visibleUpload("u", "us"));
  // Each entry of tagsAny is one AND-ed condition whose tags are OR-ed.
  for (const tags of filter.tagsAny) {
    q = q.where(({ exists, selectFrom }) =>
      exists(
        selectFrom("upload_hashtags as h")
          .select("h.upload_id")
          .whereRef("h.upload_id", "=", "u.id")
          .where("h.tag", "in", tags),
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
  const rows = await changesAfterQuery(db, at, afterId, limit).execute();
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
 * Visible uploads from before `at` whose likes or comments changed after it (like, unlike, new or
 * deleted comment): their counts changed. Reads the indexed upload_activity times.
 */
export async function socialActivitySince(db: Db, at: string, limit: number): Promise<string[]> {
  const rows = await socialActivityQuery(db, at, limit).execute();
  return rows.map((r) => r.id);
}

export function socialActivityQuery(db: Db, at: string, limit: number) {
  // Driven by the activity index (an IN list, so neither planner starts from uploads).
  return db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select("u.id")
    .where("u.id", "in", (eb) =>
      eb
        .selectFrom("upload_activity as a")
        .select("a.upload_id")
        .where("a.changed_at", ">", at)
        .orderBy("a.changed_at")
        .limit(limit),
    )
    .where("u.created_at", "<=", at)
    .where(visibleUpload("u", "us"));
}

/** Users hidden (banned) after `at`; capped, since a reconnecting client needs only recent ones. */
export async function hiddenUsersSince(db: Db, at: string, cap: number): Promise<string[]> {
  const rows = await db
    .selectFrom("users")
    .select("id")
    .where("uploads_hidden_at", ">", at)
    .orderBy("uploads_hidden_at")
    .limit(cap)
    .execute();
  return rows.map((r) => r.id);
}

/** Users unbanned after `at` and still visible; capped like hiddenUsersSince. */
export async function unhiddenUsersSince(db: Db, at: string, cap: number): Promise<string[]> {
  const rows = await db
    .selectFrom("users")
    .select("id")
    .where("unhidden_at", ">", at)
    .where("is_banned", "=", 0)
    .where("uploads_hidden_at", "is", null)
    .orderBy("unhidden_at")
    .limit(cap)
    .execute();
  return rows.map((r) => r.id);
}

/** Visible uploads of `userIds` created before `at`, newest first (an unban shows them again). */
export async function visibleUploadsOf(
  db: Db,
  userIds: string[],
  at: string,
  limit: number,
): Promise<string[]> {
  if (userIds.length === 0) return [];
  const rows = await db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select("u.id")
    .where("u.user_id", "in", userIds)
    .where("u.created_at", "<=", at)
    .where(visibleUpload("u", "us"))
    .orderBy("u.created_at", "desc")
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

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

/** Feed item rows for `ids` (any order): counts leave out banned users' likes and comments. */
export function feedItemRows(db: Db, ids: string[], viewerId: string) {
  return db
    .selectFrom("uploads as u")
    .innerJoin("users", "users.id", "u.user_id")
    .select((eb) => [
      "u.id",
      "u.user_id",
      "users.display_name",
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
      eb
        .selectFrom("likes as l")
        .innerJoin("users as lu", "lu.id", "l.user_id")
        .select((e) => e.fn.countAll<number>().as("n"))
        .whereRef("l.upload_id", "=", "u.id")
        .where("lu.is_banned", "=", 0)
        .as("like_count"),
      eb
        .selectFrom("comments as c")
        .innerJoin("users as cu", "cu.id", "c.user_id")
        .select((e) => e.fn.countAll<number>().as("n"))
        .whereRef("c.upload_id", "=", "u.id")
        .where("c.deleted_at", "is", null)
        .where("cu.is_banned", "=", 0)
        .as("comment_count"),
      eb
        .exists(
          eb
            .selectFrom("likes as ml")
            .select("ml.upload_id")
            .whereRef("ml.upload_id", "=", "u.id")
            .where("ml.user_id", "=", viewerId),
        )
        .as("liked_by_me"),
    ])
    .where("u.id", "in", ids)
    .execute();
}

export function tagsOf(db: Db, ids: string[]) {
  return db
    .selectFrom("upload_hashtags")
    .select(["upload_id", "tag"])
    .where("upload_id", "in", ids)
    .orderBy("tag")
    .execute();
}

const isoOf = (v: unknown) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());
