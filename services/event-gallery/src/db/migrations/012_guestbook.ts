import type { Migration } from "@app/kit/db";

/**
 * Guestbook (issue 27, item 7). Never edit once shipped.
 * One row per message: text (may be empty when a voice message carries it) and an optional voice
 * recording stored like a video original (a file under media/originals). Moderated like uploads:
 * `approval` for pre-moderation, `deleted_at`/`deleted_by` for the author's delete and the host's
 * takedown; a banned author's entries are hidden by the reading queries.
 */
const common = `
CREATE TABLE guestbook_entries (
  id TEXT PRIMARY KEY,
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  text TEXT NOT NULL DEFAULT '',
  voice_path TEXT,
  voice_mime TEXT,
  voice_size_bytes {{bigint}},
  voice_duration_s REAL,
  approval TEXT NOT NULL DEFAULT 'approved' CHECK (approval IN ('approved', 'pending')),
  created_at {{timestamp}} NOT NULL,
  deleted_at {{timestamp}},
  deleted_by TEXT CHECK (deleted_by IN ('owner', 'host'))
);
CREATE INDEX guestbook_live ON guestbook_entries (created_at, id) WHERE deleted_at IS NULL;
CREATE INDEX guestbook_user ON guestbook_entries (user_id);
`;

export const migration: Migration = {
  version: 12,
  name: "guestbook",
  sql: { sqlite: common, postgres: common },
};
