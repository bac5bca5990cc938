import type { Migration } from "@app/kit/db";

/**
 * Favourites and highlights (issue 27, item 9). Never edit once shipped.
 * - favorites: a guest's private stars, one row per (user, upload). No feed-stamp trigger: they
 *   show only in the starring user's own `favorited_by_me`, a per-viewer overlay field kept while
 *   `users.viewer_rev` stands (migration 011), so each star or unstar bumps it.
 * - uploads.highlighted_at: a host's highlight. Setting it also sets updated_at (in the feed
 *   stamp's column list and the delta's change time), so cached pages and deltas carry it.
 */
const common = `
CREATE TABLE favorites (
  user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  upload_id TEXT NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
  created_at {{timestamp}} NOT NULL,
  PRIMARY KEY (user_id, upload_id)
);
ALTER TABLE uploads ADD COLUMN highlighted_at {{timestamp}};
CREATE INDEX uploads_highlighted ON uploads (created_at, id) WHERE highlighted_at IS NOT NULL AND deleted_at IS NULL;
`;

export const migration: Migration = {
  version: 13,
  name: "favorites_highlights",
  sql: {
    sqlite: `${common}
CREATE TRIGGER viewer_rev_favorites_0 AFTER INSERT ON favorites BEGIN UPDATE users SET viewer_rev = viewer_rev + 1 WHERE id = NEW.user_id; END;
CREATE TRIGGER viewer_rev_favorites_1 AFTER DELETE ON favorites BEGIN UPDATE users SET viewer_rev = viewer_rev + 1 WHERE id = OLD.user_id; END;
`,
    postgres: `${common}
CREATE TRIGGER viewer_rev_favorites AFTER INSERT OR DELETE ON favorites FOR EACH ROW EXECUTE FUNCTION viewer_rev_bump();
`,
  },
};
