import type { Migration } from "@app/kit/db";

/**
 * Rate-limit windows without write-ahead log on PostgreSQL (issue 12). Never edit once shipped.
 * Every /feed and /feed/delta request counts one hit (an upsert); on a logged table each of those
 * commits waited for a WAL flush. An UNLOGGED table writes no WAL, so such commits do not wait;
 * the cost is that a server crash empties the table, i.e. forgets windows of at most minutes.
 * SQLite keeps rate limits in process memory (one process owns the file): nothing to change.
 */
export const migration: Migration = {
  version: 9,
  name: "unlogged_rate_limits",
  sql: { sqlite: "SELECT 1;", postgres: "ALTER TABLE rate_limits SET UNLOGGED;" },
};
