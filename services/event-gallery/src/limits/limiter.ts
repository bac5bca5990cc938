import type { Clock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { tooManyRequests } from "@app/kit/errors";
import type { RateLimiter } from "../context.js";
import type { GalleryDB } from "../db/schema.js";
import { countHits, pruneWindows, readWindow, type WindowRow } from "./repository.js";

interface Bucket {
  start: number;
  windowMs: number;
  count: number;
}

export interface MemoryRateLimiter extends RateLimiter {
  /** Number of live buckets (for tests and metrics). */
  size(): number;
}

const refuse = (start: number, windowMs: number, now: number, code: string | undefined) =>
  tooManyRequests((start + windowMs - now) / 1000, "Too many requests; try again later.", code);

/**
 * Fixed-window counters kept in memory, one per key; a window opens at the key's first hit. For
 * one process (SQLite: one process owns the database). Bounded: at `maxKeys` expired buckets are
 * pruned, and if the map is still full a new key is refused (429) rather than evicting someone
 * else's counter, which would reset their limit.
 */
export function createRateLimiter(clock: Clock, opts: { maxKeys?: number } = {}): MemoryRateLimiter {
  const maxKeys = opts.maxKeys ?? 100_000;
  const buckets = new Map<string, Bucket>();

  const live = (key: string, now: number): Bucket | undefined => {
    const b = buckets.get(key);
    if (b && now - b.start >= b.windowMs) {
      buckets.delete(key);
      return undefined;
    }
    return b;
  };
  const prune = (now: number) => {
    for (const [k, b] of buckets) if (now - b.start >= b.windowMs) buckets.delete(k);
  };

  return {
    async hit(key, limit, windowMs, code) {
      const now = clock.now();
      let b = live(key, now);
      if (!b) {
        if (buckets.size >= maxKeys) prune(now);
        if (buckets.size >= maxKeys)
          throw tooManyRequests(windowMs / 1000, "The server is busy; try again later.");
        b = { start: now, windowMs, count: 0 };
        buckets.set(key, b);
      }
      if (b.count >= limit) throw refuse(b.start, b.windowMs, now, code);
      b.count++;
    },
    async check(key, limit, _windowMs, code) {
      const now = clock.now();
      const b = live(key, now);
      if (b && b.count >= limit) throw refuse(b.start, b.windowMs, now, code);
    },
    size: () => buckets.size,
  };
}

/** Expired windows are deleted at most this often. */
const PRUNE_EVERY_MS = 60_000;

/**
 * The same fixed windows in the database, so several processes on one PostgreSQL count together
 * (DESIGN.md "Scale-out"). Hits are counted by group commit: the first hit is sent at once, and
 * hits that arrive while a statement is on its way are counted together by the next one (one
 * upsert for all their keys, `count + n`). Each hit learns its own place in its window, so the
 * answers are those of one upsert per hit, at one statement per round trip instead of per
 * request. A hit past the limit is refused (it still counts, which changes nothing: the window
 * does not move).
 */
export function createDbRateLimiter(database: Pick<Database<GalleryDB>, "db">, clock: Clock): RateLimiter {
  const { db } = database;
  let lastPrune = 0;
  interface Waiter {
    resolve: (place: { row: WindowRow; nth: number; now: number }) => void;
    reject: (err: unknown) => void;
  }
  let queued = new Map<string, { windowMs: number; waiters: Waiter[] }>();
  let draining = false;

  const drain = async () => {
    draining = true;
    try {
      while (queued.size > 0) {
        const batch = queued;
        queued = new Map();
        const now = clock.now();
        try {
          if (now - lastPrune >= PRUNE_EVERY_MS) {
            lastPrune = now;
            await pruneWindows(db, now);
          }
          const rows = await countHits(
            db,
            [...batch].map(([key, e]) => ({ key, n: e.waiters.length, windowMs: e.windowMs })),
            now,
          );
          for (const [key, e] of batch) {
            const row = rows.get(key);
            e.waiters.forEach((w, i) => {
              if (row) w.resolve({ row, nth: row.count - e.waiters.length + i + 1, now });
              else w.reject(new Error("rate limit upsert returned no row"));
            });
          }
        } catch (err) {
          for (const e of batch.values()) for (const w of e.waiters) w.reject(err);
        }
      }
    } finally {
      draining = false;
    }
  };

  return {
    async hit(key, limit, windowMs, code) {
      const place = await new Promise<{ row: WindowRow; nth: number; now: number }>((resolve, reject) => {
        let e = queued.get(key);
        if (!e) {
          e = { windowMs, waiters: [] };
          queued.set(key, e);
        }
        e.waiters.push({ resolve, reject });
        if (!draining) void drain();
      });
      if (place.nth > limit) throw refuse(place.row.window_start, place.row.window_ms, place.now, code);
    },
    async check(key, limit, _windowMs, code) {
      const now = clock.now();
      const w = await readWindow(db, key);
      if (w && w.window_start + w.window_ms > now && w.count >= limit)
        throw refuse(w.window_start, w.window_ms, now, code);
    },
  };
}

/** Memory on SQLite (one process owns the database), the database on PostgreSQL. */
export function createLimiterFor(deps: { database: Database<GalleryDB>; clock: Clock }): RateLimiter {
  const { database, clock } = deps;
  return database.dialect.sharedByProcesses ? createDbRateLimiter(database, clock) : createRateLimiter(clock);
}
