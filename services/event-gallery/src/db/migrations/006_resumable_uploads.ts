import type { Migration } from "@app/kit/db";

/**
 * Resumable (tus) uploads (issue 13). Never edit once shipped. One row per upload key: who owns
 * it, its idempotency key and declared length, the form fields, when it expires, and once the
 * bytes are committed, the uploads row it became (the key then replays that row).
 */
export const migration: Migration = {
  version: 6,
  name: "resumable_uploads",
  sql: `
CREATE TABLE resumable_uploads (
  key TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  client_upload_id TEXT NOT NULL,
  upload_length {{bigint}} NOT NULL,
  caption TEXT NOT NULL,
  hashtags TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL,
  expires_at {{bigint}} NOT NULL,
  upload_id TEXT
);
CREATE UNIQUE INDEX resumable_uploads_client_key ON resumable_uploads (user_id, client_upload_id);
CREATE INDEX resumable_uploads_expiry ON resumable_uploads (expires_at);
`,
};
