import type { Migration } from "@app/kit/db";

/**
 * Hosts and guests (issue 14). Never edit once shipped.
 * - uploads.approval: pre-moderation; pending rows are seen only by their uploader and hosts.
 *   Every existing row is approved. A rejection is a takedown (deleted_at), so no third value.
 * - event.cover_*: the branding cover photo (a file under DATA_DIR, served by GET /event/cover).
 */
const common = `
ALTER TABLE uploads ADD COLUMN approval TEXT NOT NULL DEFAULT 'approved' CHECK (approval IN ('approved', 'pending'));
CREATE INDEX uploads_pending ON uploads (created_at, id) WHERE approval = 'pending' AND deleted_at IS NULL;
ALTER TABLE event ADD COLUMN cover_path TEXT;
ALTER TABLE event ADD COLUMN cover_mime TEXT;
ALTER TABLE event ADD COLUMN cover_updated_at {{timestamp}};
`;

export const migration: Migration = {
  version: 7,
  name: "hosts_guests",
  sql: { sqlite: common, postgres: common },
};
