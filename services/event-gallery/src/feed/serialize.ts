import type { Kysely } from "@app/kit/db";
import type { CompressionStatus, GalleryDB } from "../db/schema.js";
import { feedItemRows, type ItemRow } from "./repository.js";

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
  /** The viewer starred it (issue 27; private to the viewer). */
  favorited_by_me: boolean;
  /** A host marked it as a highlight (issue 27). */
  highlight: boolean;
}

/** Who is looking: `liked_by_me` is theirs, and media URLs carry their `?t=` media token. */
export interface FeedViewer {
  id: string;
  mediaToken: string;
}

export const MEDIA_VARIANTS = ["original", "preview", "display", "thumbnail"] as const;
export type MediaVariant = (typeof MEDIA_VARIANTS)[number];

// Both backends hand back RFC 3339 UTC strings (the kit's PostgreSQL type parsers convert);
// only a Date (a driver without them) or another format needs parsing.
export const itemIso = (v: unknown): string =>
  typeof v === "string" && v.length === 24 && v.endsWith("Z")
    ? v
    : v instanceof Date
      ? v.toISOString()
      : new Date(String(v)).toISOString();

/**
 * Feed items for `ids`, in the order given (ids that no longer exist are skipped). Visibility is
 * the caller's business; counts leave out banned users' likes and comments. One prepared
 * statement for any number of ids; pass `database.reader` on read paths.
 */
export async function loadFeedItems(
  db: Kysely<GalleryDB>,
  ids: readonly string[],
  viewer: FeedViewer,
): Promise<FeedItem[]> {
  return (await loadItemRows(db, ids, viewer.id)).map((r) => toFeedItem(r, viewer));
}

/** The item statement's rows for `ids`, in the order given (ids that no longer exist skipped). */
export async function loadItemRows(
  db: Kysely<GalleryDB>,
  ids: readonly string[],
  viewerId: string,
): Promise<ItemRow[]> {
  if (ids.length === 0) return [];
  const rows = await feedItemRows(db, ids, viewerId);
  const byId = new Map(rows.map((r) => [r.id, r]));
  return ids.map((id) => byId.get(id)).filter((r): r is ItemRow => r !== undefined);
}

/** One row of the item statement as the contract's item, media URLs with the viewer's token. */
export function toFeedItem(r: ItemRow, viewer: FeedViewer): FeedItem {
  // The token is the same for every URL of the page: encode it once per item, not per URL.
  const t = encodeURIComponent(viewer.mediaToken);
  const base = `/api/v1/upload/${r.id}/`;
  const isVideo = r.media_type === "video";
  return {
    id: r.id,
    uploader: { id: r.user_id, display_name: r.display_name },
    caption: r.caption,
    hashtags: r.tags ? r.tags.split(",").sort() : [],
    media_type: r.media_type,
    mime_type: r.mime_type,
    created_at: itemIso(r.created_at),
    updated_at: itemIso(r.updated_at),
    like_count: Number(r.like_count ?? 0),
    comment_count: Number(r.comment_count ?? 0),
    // SQLite answers EXISTS with 0/1, PostgreSQL with a boolean.
    liked_by_me: Number(r.liked_by_me) === 1,
    compression_status: r.compression_status,
    width: r.width,
    height: r.height,
    duration_s: r.duration_s,
    original_url: r.original_path ? `${base}original?t=${t}` : null,
    preview_url: !isVideo && r.preview_path ? `${base}preview?t=${t}` : null,
    display_url: !isVideo && r.display_path ? `${base}display?t=${t}` : null,
    thumbnail_url: r.thumbnail_path ? `${base}thumbnail?t=${t}` : null,
    approval: r.approval,
    favorited_by_me: Number(r.favorited_by_me) === 1,
    highlight: r.highlighted_at !== null,
  };
}
