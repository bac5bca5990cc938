import type { Clock } from "@app/kit/clock";
import { tooManyRequests } from "@app/kit/errors";

/** Failed logins allowed per username within the window before 429. */
export const LOGIN_FAILURES_ALLOWED = 10;
export const LOGIN_WINDOW_MS = 15 * 60_000;
/** Usernames tracked at once; beyond it the oldest entry is forgotten (never refuse a login for bookkeeping). */
export const LOGIN_TRACKED_MAX = 10_000;

/**
 * Slows password guessing per username: after 10 failures within 15 minutes, further attempts
 * get 429 with Retry-After until the window ends. A success clears the count. In-process only
 * (each node keeps its own counts).
 */
export function createLoginThrottle(clock: Clock) {
  const failures = new Map<string, { count: number; since: number }>();
  const key = (username: string) => username.toLowerCase();
  return {
    /** Throws 429 `too_many_attempts` while the username is locked out. */
    check(username: string): void {
      const e = failures.get(key(username));
      if (!e) return;
      const left = e.since + LOGIN_WINDOW_MS - clock.now();
      if (left <= 0) failures.delete(key(username));
      else if (e.count >= LOGIN_FAILURES_ALLOWED)
        throw tooManyRequests(
          left / 1000,
          "Too many failed logins for this account; try again later.",
          "too_many_attempts",
        );
    },
    failed(username: string): void {
      const k = key(username);
      const now = clock.now();
      const e = failures.get(k);
      if (e && now - e.since < LOGIN_WINDOW_MS) {
        e.count += 1;
        return;
      }
      failures.delete(k);
      if (failures.size >= LOGIN_TRACKED_MAX) {
        const oldest = failures.keys().next().value;
        if (oldest !== undefined) failures.delete(oldest);
      }
      failures.set(k, { count: 1, since: now });
    },
    succeeded(username: string): void {
      failures.delete(key(username));
    },
  };
}
