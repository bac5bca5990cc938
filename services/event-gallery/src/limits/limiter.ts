import type { Clock } from "@app/kit/clock";
import { tooManyRequests } from "@app/kit/errors";
import type { RateLimiter } from "../context.js";

interface Bucket {
  start: number;
  windowMs: number;
  count: number;
}

export interface MemoryRateLimiter extends RateLimiter {
  /** Number of live buckets (for tests and metrics). */
  size(): number;
}

/**
 * Fixed-window counters kept in memory, one per key; a window opens at the key's first hit.
 * Bounded: at `maxKeys` expired buckets are pruned, and if the map is still full a new key is
 * refused (429) rather than evicting someone else's counter, which would reset their limit.
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
  const refuse = (b: Bucket, now: number, code: string | undefined) =>
    tooManyRequests((b.start + b.windowMs - now) / 1000, "Too many requests; try again later.", code);

  return {
    hit(key, limit, windowMs, code) {
      const now = clock.now();
      let b = live(key, now);
      if (!b) {
        if (buckets.size >= maxKeys) prune(now);
        if (buckets.size >= maxKeys)
          throw tooManyRequests(windowMs / 1000, "The server is busy; try again later.");
        b = { start: now, windowMs, count: 0 };
        buckets.set(key, b);
      }
      if (b.count >= limit) throw refuse(b, now, code);
      b.count++;
    },
    check(key, limit, _windowMs, code) {
      const now = clock.now();
      const b = live(key, now);
      if (b && b.count >= limit) throw refuse(b, now, code);
    },
    size: () => buckets.size,
  };
}
