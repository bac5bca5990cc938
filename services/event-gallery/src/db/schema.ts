import type { Generated, GeneratedAlways } from "@app/kit/db";

/**
 * Row types of the event-gallery schema (migrations/001 onward). Timestamps are ISO strings,
 * booleans 0/1, JSON columns go through dialect.json / dialect.fromJson.
 */
export interface EventTable {
  id: number;
  uploads_locked_at: string | null;
  export_released_at: string | null;
  export_epoch: Generated<number>;
  created_at: string;
  /** Branding cover photo (migration 007): path under DATA_DIR, its type and change time. */
  cover_path: Generated<string | null>;
  cover_mime: Generated<string | null>;
  cover_updated_at: Generated<string | null>;
}

export type Role = "guest" | "host" | "admin";

export interface UsersTable {
  id: string;
  display_name: string;
  /** Case-folded display name: uniqueness is case-insensitive. */
  display_name_key: string;
  role: Generated<Role>;
  is_banned: Generated<number>;
  recovery_pin_hash: string | null;
  /** Only the admin account has a password. */
  password_hash: string | null;
  failed_pin_attempts: Generated<number>;
  last_failed_pin_at: string | null;
  pin_locked_until: string | null;
  pin_reset_requested_at: string | null;
  client_join_id: string | null;
  total_upload_bytes: Generated<number>;
  uploads_hidden_at: string | null;
  /** Set by unban (migration 005) so the delta can report it. */
  unhidden_at: Generated<string | null>;
  /** Bumped with every change of the user's likes (migration 011): per-viewer feed fields. */
  viewer_rev: Generated<number>;
  created_at: string;
  updated_at: string;
}

export interface SessionsTable {
  id: string;
  user_id: string;
  token_hash: string;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export interface ConfigTable {
  key: string;
  value: unknown;
  updated_at: string;
}

export interface HostAuditTable {
  id: string;
  actor_id: string | null;
  action: string;
  target_type: string;
  target_id: string | null;
  details: unknown;
  created_at: string;
}

export type CompressionStatus = "processing" | "done" | "failed";

export interface UploadsTable {
  id: string;
  user_id: string;
  client_upload_id: string | null;
  caption: Generated<string>;
  media_type: "image" | "video";
  mime_type: string;
  original_path: string | null;
  preview_path: string | null;
  display_path: string | null;
  thumbnail_path: string | null;
  original_size_bytes: number;
  width: number | null;
  height: number | null;
  duration_s: number | null;
  compression_status: Generated<CompressionStatus>;
  derivatives_rev: Generated<number>;
  derivative_attempts: Generated<number>;
  derivative_last_error: string | null;
  /** Boots on which the backfill tried this row; it gives up after 3. */
  derivative_boots: Generated<number>;
  /** A claimed render belongs to its worker until then, ms since epoch (migration 008). */
  derivative_lease_until: Generated<number | null>;
  deleted_at: string | null;
  deleted_by: "owner" | "host" | "system" | null;
  media_reclaimed_at: string | null;
  created_at: string;
  updated_at: string;
  /** Later of updated_at and deleted_at, computed by the database (migration 005). */
  changed_at: GeneratedAlways<string>;
  /** Pre-moderation (migration 007): pending rows are seen by their uploader and hosts only. */
  approval: Generated<"approved" | "pending">;
  /** A host's highlight (migration 012); null when not highlighted. */
  highlighted_at: Generated<string | null>;
}

/** A guest's private star on an upload (migration 012). */
export interface FavoritesTable {
  user_id: string;
  upload_id: string;
  created_at: string;
}

/** A resumable (tus) upload key (migration 006). */
export interface ResumableUploadsTable {
  key: string;
  user_id: string;
  client_upload_id: string;
  upload_length: number;
  caption: string;
  /** JSON array of normalised tags. */
  hashtags: string;
  created_at: string;
  /** Epoch milliseconds. */
  expires_at: number;
  /** The uploads row the bytes became; null while unfinished. */
  upload_id: string | null;
}

export interface UploadHashtagsTable {
  upload_id: string;
  tag: string;
}

export interface LikesTable {
  upload_id: string;
  user_id: string;
  created_at: string;
}

export interface CommentsTable {
  id: string;
  upload_id: string;
  user_id: string;
  text: string;
  created_at: string;
  deleted_at: string | null;
  deleted_by: "owner" | "host" | null;
}

export type ExportKind = "zip" | "html";
export type ExportStatus = "pending" | "running" | "done" | "failed";

export interface ExportJobsTable {
  id: string;
  kind: ExportKind;
  status: ExportStatus;
  epoch: number;
  progress_pct: Generated<number>;
  file_path: string | null;
  size_bytes: number | null;
  message: string | null;
  started_at: string | null;
  finished_at: string | null;
  updated_at: string;
  /** Process holding a running job, and until when (epoch ms; migration 005). */
  lease_owner: Generated<string | null>;
  lease_until: Generated<number | null>;
}

export interface ExportDownloadsTable {
  id: string;
  user_id: string;
  kind: string;
  created_at: string;
}

/** Last like/unlike/comment change per upload (migration 005). */
export interface UploadActivityTable {
  upload_id: string;
  changed_at: string;
}

export interface RateLimitsTable {
  key: string;
  window_start: number;
  window_ms: number;
  count: number;
}

export interface TicketsTable {
  /** SHA-256 of the ticket: a leaked database row cannot be redeemed. */
  ticket_hash: string;
  purpose: "stream" | "download";
  kind: string | null;
  user_id: string;
  session_id: string;
  /** Epoch milliseconds. */
  expires_at: number;
}

/** A guestbook message (migration 011): text and/or a voice recording stored under media/. */
export interface GuestbookEntriesTable {
  id: string;
  user_id: string;
  text: Generated<string>;
  voice_path: string | null;
  voice_mime: string | null;
  voice_size_bytes: number | null;
  voice_duration_s: number | null;
  approval: Generated<"approved" | "pending">;
  created_at: string;
  deleted_at: string | null;
  deleted_by: "owner" | "host" | null;
}

/** One row (id 1): bumped by trigger on every write a feed page can show (migration 010). */
export interface FeedStampTable {
  id: number;
  n: number;
}

export interface GalleryDB {
  event: EventTable;
  users: UsersTable;
  sessions: SessionsTable;
  config: ConfigTable;
  host_audit: HostAuditTable;
  uploads: UploadsTable;
  upload_hashtags: UploadHashtagsTable;
  likes: LikesTable;
  comments: CommentsTable;
  export_jobs: ExportJobsTable;
  export_downloads: ExportDownloadsTable;
  upload_activity: UploadActivityTable;
  rate_limits: RateLimitsTable;
  tickets: TicketsTable;
  resumable_uploads: ResumableUploadsTable;
  feed_stamp: FeedStampTable;
  social_stamp: FeedStampTable;
  guestbook_entries: GuestbookEntriesTable;
  favorites: FavoritesTable;
}
