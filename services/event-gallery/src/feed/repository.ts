import { type Kysely, sql } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** Every SQL statement of the feed read model. */
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

/** Visible uploads (not deleted, uploader neither banned nor hidden), newest first, after `before`. */
export async function feedPage(
  db: Db,
  filter: FeedFilter,
  before: FeedKey | null,
  limit: number,
): Promise<FeedKey[]> {
  let q = db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select(["u.id", "u.created_at"])
    .where("u.deleted_at", "is", null)
    .where("us.is_banned", "=", 0)
    .where("us.uploads_hidden_at", "is", null);
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
  if (before) {
    q = q.where((eb) =>
      eb.or([
        eb("u.created_at", "<", before.created_at),
        eb.and([eb("u.created_at", "=", before.created_at), eb("u.id", "<", before.id)]),
      ]),
    );
  }
  const rows = await q.orderBy("u.created_at", "desc").orderBy("u.id", "desc").limit(limit).execute();
  return rows.map((r) => ({ id: r.id, created_at: isoOf(r.created_at) }));
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
 * Uploads that changed (created, edited, processed, deleted) after (at, id), oldest change first.
 * A takedown may not touch updated_at, so the change time is the later of updated_at and deleted_at.
 */
export async function changesAfter(db: Db, at: string, afterId: string, limit: number): Promise<ChangeRow[]> {
  const changedAt = sql<string>`(CASE WHEN u.deleted_at IS NOT NULL AND u.deleted_at > u.updated_at THEN u.deleted_at ELSE u.updated_at END)`;
  const rows = await db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select([
      "u.id",
      "u.user_id",
      "u.created_at",
      "u.deleted_at",
      "us.is_banned",
      "us.uploads_hidden_at",
      changedAt.as("changed_at"),
    ])
    .where((eb) =>
      eb.or([eb(changedAt, ">", at), eb.and([eb(changedAt, "=", at), eb("u.id", ">", afterId)])]),
    )
    .orderBy(changedAt)
    .orderBy("u.id")
    .limit(limit)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    user_id: r.user_id,
    created_at: isoOf(r.created_at),
    deleted: r.deleted_at !== null,
    visible_uploader: r.is_banned === 0 && r.uploads_hidden_at === null,
    changed_at: isoOf(r.changed_at),
  }));
}

/**
 * Visible uploads from before `at` whose likes or comments changed after it (a like, a new or
 * deleted comment): their counts changed. An unlike leaves no row; clients learn it from the
 * `like` event on the stream.
 */
export async function socialActivitySince(db: Db, at: string, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select("u.id")
    .where("u.deleted_at", "is", null)
    .where("us.is_banned", "=", 0)
    .where("us.uploads_hidden_at", "is", null)
    .where("u.created_at", "<=", at)
    .where((eb) =>
      eb.or([
        eb("u.id", "in", eb.selectFrom("likes").select("likes.upload_id").where("likes.created_at", ">", at)),
        eb(
          "u.id",
          "in",
          eb
            .selectFrom("comments")
            .select("comments.upload_id")
            .where((c) => c.or([c("comments.created_at", ">", at), c("comments.deleted_at", ">", at)])),
        ),
      ]),
    )
    .orderBy("u.created_at", "desc")
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
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

export async function visibleUploaders(
  db: Db,
): Promise<{ id: string; display_name: string; upload_count: number }[]> {
  const rows = await db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select(["us.id", "us.display_name", "us.display_name_key", (eb) => eb.fn.count<number>("u.id").as("n")])
    .where("u.deleted_at", "is", null)
    .where("us.is_banned", "=", 0)
    .where("us.uploads_hidden_at", "is", null)
    .groupBy(["us.id", "us.display_name", "us.display_name_key"])
    .orderBy("us.display_name_key")
    .execute();
  return rows.map((r) => ({ id: r.id, display_name: r.display_name, upload_count: Number(r.n) }));
}

const isoOf = (v: unknown) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());
