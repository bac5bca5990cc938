import { type Kysely, preparedQuery, sql } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** Every SQL statement of the shared rate limiter (fixed windows, one row per key). */
type Db = Kysely<GalleryDB>;

export interface WindowRow {
  window_start: number;
  window_ms: number;
  count: number;
}

/**
 * Count one hit in one statement: a window that has run out starts again at `now` with 1. Atomic
 * per key on both backends (an upsert), so processes sharing the database count together.
 */
export async function countHit(db: Db, key: string, now: number, windowMs: number): Promise<WindowRow> {
  // Every /feed and /feed/delta request counts a hit: a prepared statement, compiled once.
  const [row] = await hitStatement(db, { key, now, windowMs });
  if (!row) throw new Error("rate limit upsert returned no row");
  return {
    window_start: Number(row.window_start),
    window_ms: Number(row.window_ms),
    count: Number(row.count),
  };
}

const hitStatement = preparedQuery(
  (_db: Db, p: { key: string; now: number; windowMs: number }) => sql<WindowRow>`
    INSERT INTO rate_limits (key, window_start, window_ms, count) VALUES (${p.key}, ${p.now}, ${p.windowMs}, 1)
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN rate_limits.window_start + rate_limits.window_ms <= ${p.now} THEN 1
                   ELSE rate_limits.count + 1 END,
      window_start = CASE WHEN rate_limits.window_start + rate_limits.window_ms <= ${p.now} THEN ${p.now}
                          ELSE rate_limits.window_start END,
      window_ms = ${p.windowMs}
    RETURNING window_start, window_ms, count`,
);

export async function readWindow(db: Db, key: string): Promise<WindowRow | undefined> {
  const row = await db
    .selectFrom("rate_limits")
    .select(["window_start", "window_ms", "count"])
    .where("key", "=", key)
    .executeTakeFirst();
  return (
    row && {
      window_start: Number(row.window_start),
      window_ms: Number(row.window_ms),
      count: Number(row.count),
    }
  );
}

/** Drop windows that have run out (bounded table). */
export async function pruneWindows(db: Db, now: number): Promise<void> {
  await db.deleteFrom("rate_limits").where(sql<boolean>`window_start + window_ms <= ${now}`).execute();
}
