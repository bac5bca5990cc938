import type { Clock } from "@app/kit/clock";

/** `limit` failures per `windowMs` and key, over at most `maxKeys` keys (default 10,000). */
export interface FailureWindowDeps {
  clock: Clock;
  limit: number;
  windowMs: number;
  maxKeys?: number;
}

export type FailureWindow = ReturnType<typeof createFailureWindow>;

/**
 * Counts events per key in a fixed window (the bridge is one process with its state in
 * STATE_DIR, so an in-memory count is the shared truth here). Bounded: at most `maxKeys` keys
 * are tracked; the oldest window is dropped first.
 */
export function createFailureWindow(deps: FailureWindowDeps) {
  const { clock, limit, windowMs, maxKeys = 10_000 } = deps;
  const hits = new Map<string, { start: number; n: number }>();

  function current(key: string): { start: number; n: number } | undefined {
    const e = hits.get(key);
    if (e && clock.now() - e.start >= windowMs) {
      hits.delete(key);
      return undefined;
    }
    return e;
  }

  /** True while fewer than `limit` events were counted for `key` in the window. */
  function allowed(key: string): boolean {
    return (current(key)?.n ?? 0) < limit;
  }

  /** Count one event. */
  function fail(key: string): void {
    const e = current(key);
    if (e) e.n += 1;
    else {
      if (hits.size >= maxKeys) {
        const oldest = hits.keys().next().value;
        if (oldest !== undefined) hits.delete(oldest);
      }
      hits.set(key, { start: clock.now(), n: 1 });
    }
  }

  function retryAfterS(key: string): number {
    const e = current(key);
    return e ? Math.max(1, Math.ceil((e.start + windowMs - clock.now()) / 1000)) : 1;
  }

  return {
    allowed,
    fail,
    retryAfterS,
  };
}
