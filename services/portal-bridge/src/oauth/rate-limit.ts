import type { Clock } from "@app/kit/clock";

/**
 * Counts events per key in a fixed window (the bridge is one process with its state in
 * STATE_DIR, so an in-memory count is the shared truth here). Bounded: at most `maxKeys` keys
 * are tracked; the oldest window is dropped first.
 */
export class FailureWindow {
  private readonly hits = new Map<string, { start: number; n: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxKeys = 10_000,
  ) {}

  private current(key: string): { start: number; n: number } | undefined {
    const e = this.hits.get(key);
    if (e && this.clock.now() - e.start >= this.windowMs) {
      this.hits.delete(key);
      return undefined;
    }
    return e;
  }

  /** True while fewer than `limit` events were counted for `key` in the window. */
  allowed(key: string): boolean {
    return (this.current(key)?.n ?? 0) < this.limit;
  }

  /** Count one event. */
  fail(key: string): void {
    const e = this.current(key);
    if (e) e.n += 1;
    else {
      if (this.hits.size >= this.maxKeys) {
        const oldest = this.hits.keys().next().value;
        if (oldest !== undefined) this.hits.delete(oldest);
      }
      this.hits.set(key, { start: this.clock.now(), n: 1 });
    }
  }

  retryAfterS(key: string): number {
    const e = this.current(key);
    return e ? Math.max(1, Math.ceil((e.start + this.windowMs - this.clock.now()) / 1000)) : 1;
  }
}
