import type { Migration } from "@app/kit/db";

/** The initial event-gallery schema: every table the seed names. Never edit once shipped. */
export const migration: Migration = {
  version: 1,
  name: "initial_schema",
  sql: `
CREATE TABLE event (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  uploads_locked_at {{timestamp}},
  export_released_at {{timestamp}},
  export_epoch INTEGER NOT NULL DEFAULT 0,
  created_at {{timestamp}} NOT NULL
);

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  display_name TEXT NOT NULL,
  display_name_key TEXT NOT NULL UNIQUE,
  role TEXT NOT NULL DEFAULT 'guest' CHECK (role IN ('guest', 'host', 'admin')),
  is_banned {{bool}} NOT NULL DEFAULT 0,
  recovery_pin_hash TEXT,
  password_hash TEXT,
  failed_pin_attempts INTEGER NOT NULL DEFAULT 0,
  last_failed_pin_at {{timestamp}},
  pin_locked_until {{timestamp}},
  pin_reset_requested_at {{timestamp}},
  client_join_id TEXT UNIQUE,
  total_upload_bytes {{bigint}} NOT NULL DEFAULT 0 CHECK (total_upload_bytes >= 0),
  uploads_hidden_at {{timestamp}},
  created_at {{timestamp}} NOT NULL,
  updated_at {{timestamp}} NOT NULL
);
CREATE INDEX users_role ON users (role);

CREATE TABLE sessions (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  token_hash TEXT NOT NULL UNIQUE,
  created_at {{timestamp}} NOT NULL,
  last_seen_at {{timestamp}} NOT NULL,
  expires_at {{timestamp}} NOT NULL,
  revoked_at {{timestamp}}
);
CREATE INDEX sessions_user ON sessions (user_id);

CREATE TABLE config (
  key TEXT PRIMARY KEY,
  value {{json}} NOT NULL,
  updated_at {{timestamp}} NOT NULL
);

CREATE TABLE host_audit (
  id TEXT PRIMARY KEY,
  actor_id TEXT REFERENCES users (id) ON DELETE SET NULL,
  action TEXT NOT NULL,
  target_type TEXT NOT NULL,
  target_id TEXT,
  details {{json}},
  created_at {{timestamp}} NOT NULL
);
CREATE INDEX host_audit_created ON host_audit (created_at, id);

CREATE TABLE uploads (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  client_upload_id TEXT,
  caption TEXT NOT NULL DEFAULT '',
  media_type TEXT NOT NULL CHECK (media_type IN ('image', 'video')),
  mime_type TEXT NOT NULL,
  original_path TEXT,
  preview_path TEXT,
  display_path TEXT,
  thumbnail_path TEXT,
  original_size_bytes {{bigint}} NOT NULL,
  width INTEGER,
  height INTEGER,
  duration_s REAL,
  compression_status TEXT NOT NULL DEFAULT 'processing' CHECK (compression_status IN ('processing', 'done', 'failed')),
  derivatives_rev INTEGER NOT NULL DEFAULT 0,
  derivative_attempts INTEGER NOT NULL DEFAULT 0,
  derivative_last_error TEXT,
  derivative_boots INTEGER NOT NULL DEFAULT 0,
  deleted_at {{timestamp}},
  deleted_by TEXT CHECK (deleted_by IN ('owner', 'host', 'system')),
  media_reclaimed_at {{timestamp}},
  created_at {{timestamp}} NOT NULL,
  updated_at {{timestamp}} NOT NULL
);
CREATE INDEX uploads_feed ON uploads (created_at, id);
CREATE INDEX uploads_user ON uploads (user_id, created_at);
CREATE INDEX uploads_status ON uploads (compression_status, derivatives_rev);
-- The idempotency key is claimed by a live row, and stays claimed after a host takedown.
CREATE UNIQUE INDEX uploads_client_key ON uploads (user_id, client_upload_id)
  WHERE client_upload_id IS NOT NULL AND (deleted_at IS NULL OR deleted_by = 'host');

CREATE TABLE upload_hashtags (
  upload_id TEXT NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
  tag TEXT NOT NULL,
  PRIMARY KEY (upload_id, tag)
);
CREATE INDEX upload_hashtags_tag ON upload_hashtags (tag, upload_id);

CREATE TABLE likes (
  upload_id TEXT NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  created_at {{timestamp}} NOT NULL,
  PRIMARY KEY (upload_id, user_id)
);

CREATE TABLE comments (
  id TEXT PRIMARY KEY,
  upload_id TEXT NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  text TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL,
  deleted_at {{timestamp}},
  deleted_by TEXT CHECK (deleted_by IN ('owner', 'host'))
);
CREATE INDEX comments_upload ON comments (upload_id, created_at);

CREATE TABLE export_jobs (
  id TEXT PRIMARY KEY,
  kind TEXT NOT NULL UNIQUE CHECK (kind IN ('zip', 'html')),
  status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
  epoch INTEGER NOT NULL,
  progress_pct INTEGER NOT NULL DEFAULT 0,
  file_path TEXT,
  size_bytes {{bigint}},
  message TEXT,
  started_at {{timestamp}},
  finished_at {{timestamp}},
  updated_at {{timestamp}} NOT NULL
);

CREATE TABLE export_downloads (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  kind TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL
);
CREATE INDEX export_downloads_user ON export_downloads (user_id, created_at);
`,
};
