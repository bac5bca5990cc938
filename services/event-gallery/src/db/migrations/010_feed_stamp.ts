import type { Migration } from "@app/kit/db";

/**
 * The feed stamp (issue 12). Never edit once shipped.
 * A one-row counter that every write able to change what a feed page shows bumps in the same
 * transaction, by trigger (so no writer can forget it): uploads (any column a feed item shows),
 * tags, likes, comments, and the uploader columns of users (name, ban, hidden). A process may
 * serve a cached page for as long as the stamp it reads is the one the page was built under;
 * two processes on one PostgreSQL see the same stamp.
 * PostgreSQL: the bump is a deferred constraint trigger, so the stamp row is locked only at
 * commit, after every other lock the transaction takes (no deadlock with row locks taken
 * earlier), and only once per transaction (the row remembers the last transaction id).
 */
const UPLOAD_COLUMNS = [
  "user_id",
  "caption",
  "media_type",
  "mime_type",
  "created_at",
  "updated_at",
  "compression_status",
  "width",
  "height",
  "duration_s",
  "original_path",
  "preview_path",
  "display_path",
  "thumbnail_path",
  "approval",
  "deleted_at",
].join(", ");
const USER_COLUMNS = "display_name, is_banned, uploads_hidden_at";

/** [table, the UPDATE OF list or null for any column] */
const SOURCES: [string, string | null][] = [
  ["uploads", UPLOAD_COLUMNS],
  ["upload_hashtags", null],
  ["likes", null],
  ["comments", null],
  ["users", USER_COLUMNS],
];

const sqliteTriggers = SOURCES.flatMap(([table, cols]) =>
  (table === "users"
    ? ["DELETE", `UPDATE OF ${cols}`]
    : ["INSERT", "DELETE", cols ? `UPDATE OF ${cols}` : "UPDATE"]
  ).map(
    (event, i) =>
      `CREATE TRIGGER feed_stamp_${table}_${i} AFTER ${event} ON ${table} BEGIN UPDATE feed_stamp SET n = n + 1 WHERE id = 1; END;`,
  ),
).join("\n");

const pgTriggers = SOURCES.map(([table, cols]) => {
  const events =
    table === "users"
      ? `DELETE OR UPDATE OF ${cols}`
      : `INSERT OR DELETE OR UPDATE${cols ? ` OF ${cols}` : ""}`;
  return `CREATE CONSTRAINT TRIGGER feed_stamp_${table} AFTER ${events} ON ${table}
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION feed_stamp_bump();`;
}).join("\n");

export const migration: Migration = {
  version: 10,
  name: "feed_stamp",
  sql: {
    sqlite: `
CREATE TABLE feed_stamp (id INTEGER PRIMARY KEY CHECK (id = 1), n INTEGER NOT NULL);
INSERT INTO feed_stamp (id, n) VALUES (1, 1);
${sqliteTriggers}
`,
    postgres: `
CREATE TABLE feed_stamp (id INTEGER PRIMARY KEY CHECK (id = 1), n BIGINT NOT NULL, xid TEXT);
INSERT INTO feed_stamp (id, n) VALUES (1, 1);
CREATE FUNCTION feed_stamp_bump() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE feed_stamp SET n = n + 1, xid = pg_current_xact_id()::text
   WHERE id = 1 AND xid IS DISTINCT FROM pg_current_xact_id()::text;
  RETURN NULL;
END $$;
${pgTriggers}
`,
  },
};
