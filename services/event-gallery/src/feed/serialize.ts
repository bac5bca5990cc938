import type { Kysely } from "@app/kit/db";
import type { CompressionStatus, GalleryDB } from "../db/schema.js";
import { feedItemRows, tagsOf } from "./repository.js";

/** The contract's `upload` shape, which is also the feed item. */
export interface FeedItem {
  id: string;
  uploader: { id: string; display_name: string };
  caption: string;
  hashtags: string[];
  media_type: "image" | "video";
  mime_type: string;
  created_at: string;
  updated_at: string;
  like_count: number;
  comment_count: number;
  liked_by_me: boolean;
  compression_status: CompressionStatus;
  width: number | null;
  height: number | null;
  duration_s: number | null;
  original_url: string | null;
  preview_url: string | null;
  display_url: string | null;
  thumbnail_url: string | null;
  /** Pre-moderation: a guest sees "pending" only on their own uploads (issue 14). */
  approval: "approved" | "pending";
}

/** Who is looking: `liked_by_me` is theirs, and media URLs carry their `?t=` media token. */
export interface FeedViewer {
  id: string;
  mediaToken: string;
}

export const MEDIA_VARIANTS = ["original", "preview", "display", "thumbnail"] as const;
export type MediaVariant = (typeof MEDIA_VARIANTS)[number];

export const mediaUrl = (uploadId: string, variant: MediaVariant, token: string) =>
  `/api/v1/upload/${uploadId}/${variant}?t=${encodeURIComponent(token)}`;

const toIso = (v: unknown) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());

/**
 * Feed items for `ids`, in the order given (ids that no longer exist are skipped). Visibility is
 * the caller's business; counts leave out banned users' likes and comments. Two queries for any
 * number of ids (counts and liked_by_me are correlated subqueries); pass `database.reader` on
 * read paths.
 */
export async function loadFeedItems(
  db: Kysely<GalleryDB>,
  ids: readonly string[],
  viewer: FeedViewer,
): Promise<FeedItem[]> {
  if (ids.length === 0) return [];
  const list = [...ids];
  // Both reads at once: on SQLite's reader they do not queue, on PostgreSQL they use two clients.
  const [rows, tags] = await Promise.all([feedItemRows(db, list, viewer.id), tagsOf(db, list)]);
  const tagsBy = new Map<string, string[]>();
  for (const t of tags) {
    const arr = tagsBy.get(t.upload_id) ?? [];
    arr.push(t.tag);
    tagsBy.set(t.upload_id, arr);
  }
  const byId = new Map(rows.map((r) => [r.id, r]));
  const items: FeedItem[] = [];
  for (const id of list) {
    const r = byId.get(id);
    if (!r) continue;
    const url = (variant: MediaVariant, path: string | null) =>
      path ? mediaUrl(r.id, variant, viewer.mediaToken) : null;
    const isVideo = r.media_type === "video";
    items.push({
      id: r.id,
      uploader: { id: r.user_id, display_name: r.display_name },
      caption: r.caption,
      hashtags: tagsBy.get(r.id) ?? [],
      media_type: r.media_type,
      mime_type: r.mime_type,
      created_at: toIso(r.created_at),
      updated_at: toIso(r.updated_at),
      like_count: Number(r.like_count ?? 0),
      comment_count: Number(r.comment_count ?? 0),
      // SQLite answers EXISTS with 0/1, PostgreSQL with a boolean.
      liked_by_me: Number(r.liked_by_me) === 1,
      compression_status: r.compression_status,
      width: r.width,
      height: r.height,
      duration_s: r.duration_s,
      original_url: url("original", r.original_path),
      preview_url: isVideo ? null : url("preview", r.preview_path),
      display_url: isVideo ? null : url("display", r.display_path),
      thumbnail_url: url("thumbnail", r.thumbnail_path),
      approval: r.approval,
    });
  }
  return items;
}
