import { createHash } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { tooManyRequests } from "@app/kit/errors";
import type { PlatformDB } from "../db/schema.js";
import { clearFailures, failuresOf, pruneFailures, recordFailure } from "./login-throttle-repository.js";

/** Failed logins allowed per username and client within the window before 429. */
export const LOGIN_FAILURES_ALLOWED = 10;
export const LOGIN_WINDOW_MS = 15 * 60_000;

/**
 * `client` is the client's address (kit http/proxy `clientAddress`): guesses from one client
 * cannot lock the account for everyone else. Behind a proxy that only holds with TRUST_PROXY
 * set; otherwise every client has the proxy's address and shares one count per username.
 */
export interface LoginThrottle {
  /** Throws 429 `too_many_attempts` (Retry-After: until the window ends) while the username is locked out for this client. */
  check(username: string, client?: string): Promise<void>;
  failed(username: string, client?: string): Promise<void>;
  /** A success clears the count of the username for this client. */
  succeeded(username: string, client?: string): Promise<void>;
}

/**
 * Slows password guessing per username and client: after 10 failures within 15 minutes, further attempts
 * get 429 with Retry-After until the window ends. The counts live in the database, so every
 * process on it enforces the same limit (an attacker gains nothing by spreading guesses over
 * instances). Usernames are compared case-insensitively; username and client are stored only as
 * a SHA-256.
 */
export function createLoginThrottle(deps: { database: Database<PlatformDB>; clock: Clock }): LoginThrottle {
  const { database, clock } = deps;
  const key = (username: string, client = "") =>
    createHash("sha256").update(`${username.toLowerCase()}\n${client}`).digest("hex");
  return {
    async check(username, client) {
      const e = await failuresOf(database.db, key(username, client));
      if (!e || e.failures < LOGIN_FAILURES_ALLOWED) return;
      const left = e.windowStartMs + LOGIN_WINDOW_MS - clock.now();
      if (left > 0)
        throw tooManyRequests(
          left / 1000,
          "Too many failed logins for this account; try again later.",
          "too_many_attempts",
        );
    },
    async failed(username, client) {
      const now = clock.now();
      const expiredBefore = now - LOGIN_WINDOW_MS;
      await database.writeTx(async (trx) => {
        await recordFailure(trx, key(username, client), now, expiredBefore);
        await pruneFailures(trx, expiredBefore);
      });
    },
    async succeeded(username, client) {
      const k = key(username, client);
      // A read first: the common case (no failures recorded) takes no write lock.
      if (!(await failuresOf(database.db, k))) return;
      await database.writeTx((trx) => clearFailures(trx, k));
    },
  };
}
