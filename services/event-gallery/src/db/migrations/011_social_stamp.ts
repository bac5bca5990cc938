import type { Migration } from "@app/kit/db";

/**
 * Reactions leave cached feed pages alone (issue 27). Never edit once shipped.
 * - Likes and comments stop bumping the feed stamp (migration 010) and bump `social_stamp`
 *   instead: a cached page's items stand through reactions, and only the like and comment counts
 *   (kept per process under both stamps) are read again.
 * - `users.viewer_rev` is bumped in the transaction of every change of that user's likes, so the
 *   `liked_by_me` answers a process keeps per viewer stand until the viewer's own next like or
 *   unlike. Another per-viewer feed field (a favourite) adds a trigger calling `viewer_rev_bump`
 *   on its own table (a `user_id` column) in its own migration.
 * - `uploads_own_pending`: whether a user has pending uploads of their own (their /feed then lists
 *   them in place) is one index probe, read with the session.
 * PostgreSQL: the social bump is a deferred constraint trigger, as the feed stamp's (locks the
 * one row only at commit, once per transaction).
 */
const SOCIAL_TABLES = ["likes", "comments"];

const sqliteSocial = SOCIAL_TABLES.flatMap((table) => [
  ...[0, 1, 2].map((i) => `DROP TRIGGER feed_stamp_${table}_${i};`),
  ...["INSERT", "DELETE", "UPDATE"].map(
    (event, i) =>
      `CREATE TRIGGER social_stamp_${table}_${i} AFTER ${event} ON ${table} BEGIN UPDATE social_stamp SET n = n + 1 WHERE id = 1; END;`,
  ),
]).join("\n");

const pgSocial = SOCIAL_TABLES.map(
  (table) => `DROP TRIGGER feed_stamp_${table} ON ${table};
CREATE CONSTRAINT TRIGGER social_stamp_${table} AFTER INSERT OR DELETE OR UPDATE ON ${table}
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION social_stamp_bump();`,
).join("\n");

const OWN_PENDING =
  "CREATE INDEX uploads_own_pending ON uploads (user_id) WHERE approval = 'pending' AND deleted_at IS NULL;";

export const migration: Migration = {
  version: 11,
  name: "social_stamp",
  sql: {
    sqlite: `
CREATE TABLE social_stamp (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
INSERT INTO social_stamp (id, n) VALUES (1, 1);
${sqliteSocial}
ALTER TABLE users ADD COLUMN viewer_rev INTEGER NOT NULL DEFAULT 0;
CREATE TRIGGER viewer_rev_likes_0 AFTER INSERT ON likes BEGIN UPDATE users SET viewer_rev = viewer_rev + 1 WHERE id = NEW.user_id; END;
CREATE TRIGGER viewer_rev_likes_1 AFTER DELETE ON likes BEGIN UPDATE users SET viewer_rev = viewer_rev + 1 WHERE id = OLD.user_id; END;
${OWN_PENDING}
`,
    postgres: `
CREATE TABLE social_stamp (id INTEGER PRIMARY KEY CHECK (id = 1), n BIGINT NOT NULL, xid TEXT);
INSERT INTO social_stamp (id, n) VALUES (1, 1);
CREATE FUNCTION social_stamp_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE social_stamp SET n = n + 1, xid = pg_current_xact_id()::text
   WHERE id = 1 AND xid IS DISTINCT FROM pg_current_xact_id()::text;
  RETURN NULL;
END $$;
${pgSocial}
ALTER TABLE users ADD COLUMN viewer_rev BIGINT NOT NULL DEFAULT 0;
CREATE FUNCTION viewer_rev_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    UPDATE users SET viewer_rev = viewer_rev + 1 WHERE id = OLD.user_id;
  ELSE
    UPDATE users SET viewer_rev = viewer_rev + 1 WHERE id = NEW.user_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER viewer_rev_likes AFTER INSERT OR DELETE ON likes FOR EACH ROW EXECUTE FUNCTION viewer_rev_bump();
${OWN_PENDING}
`,
  },
};
