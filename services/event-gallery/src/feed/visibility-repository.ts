import { type Expression, type SqlBool, sql } from "@app/kit/db";

/**
 * THE "visible upload" predicate: the one place that says which uploads appear in the feed, the
 * delta, the uploader list, counts and the keepsake. `u` is the alias of `uploads`, `us` of the
 * uploader's `users` row in the calling query. Add any new visibility rule here, nowhere else.
 */
export function visibleUpload(u = "u", us = "us"): Expression<SqlBool> {
  // Pre-moderation (issue 14): a pending upload is seen only by its uploader and hosts, through
  // their own queries (GET /feed?mine=1, GET /host/pending), never through this predicate.
  return sql<SqlBool>`(${sql.ref(`${u}.deleted_at`)} IS NULL AND ${sql.ref(`${u}.approval`)} = 'approved' AND ${visibleUploader(us)})`;
}

/** The uploader half of the predicate (a banned or hidden user's uploads are invisible). */
export function visibleUploader(us = "us"): Expression<SqlBool> {
  return sql<SqlBool>`(${sql.ref(`${us}.is_banned`)} = 0 AND ${sql.ref(`${us}.uploads_hidden_at`)} IS NULL)`;
}
