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
 * Count `n` hits on each key in one statement (the PostgreSQL limiter's group commit: one entry
 * per key). Per key the same rule as countHit: a window that has run out starts again at `now`,
 * counting these `n`. Keys, counts and windows are bound as one array value each (PostgreSQL:
 * on SQLite the limiter lives in memory). Atomic per key, so processes count together.
 */
export async function countHits(
  db: Db,
  hits: readonly { key: string; n: number; windowMs: number }[],
  now: number,
): Promise<Map<string, WindowRow>> {
  const rows = await hitsStatement(db, {
    keys: hits.map((h) => h.key),
    ns: hits.map((h) => h.n),
    windows: hits.map((h) => h.windowMs),
    now,
  });
  return new Map(
    rows.map((r) => [
      r.key,
      { window_start: Number(r.window_start), window_ms: Number(r.window_ms), count: Number(r.count) },
    ]),
  );
}

const hitsStatement = preparedQuery(
  (_db: Db, p: { keys: unknown; ns: unknown; windows: unknown; now: number }) => sql<
    WindowRow & { key: string }
  >`
    INSERT INTO rate_limits (key, window_start, window_ms, count)
    SELECT h.k, ${p.now}, h.w, h.n FROM unnest(${p.keys}::text[], ${p.ns}::int[], ${p.windows}::bigint[]) AS h (k, n, w)
    ON CONFLICT (key) DO UPDATE SET
      count = CASE WHEN rate_limits.window_start + rate_limits.window_ms <= ${p.now} THEN excluded.count
                   ELSE rate_limits.count + excluded.count END,
      window_start = CASE WHEN rate_limits.window_start + rate_limits.window_ms <= ${p.now} THEN ${p.now}
                          ELSE rate_limits.window_start END,
      window_ms = excluded.window_ms
    RETURNING key, window_start, window_ms, count`,
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
