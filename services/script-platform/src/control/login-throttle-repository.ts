import { type Kysely, sql } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

/** SQL of login_failures: the admin login throttle's counts, shared by every process. */

export async function failuresOf(
  db: Kysely<PlatformDB>,
  key: string,
): Promise<{ failures: number; windowStartMs: number } | null> {
  const r = await db
    .selectFrom("login_failures")
    .select(["failures", "window_start_ms"])
    .where("username_key", "=", key)
    .executeTakeFirst();
  return r ? { failures: Number(r.failures), windowStartMs: Number(r.window_start_ms) } : null;
}

/**
 * Counts one failure in one statement (atomic across processes): a window that started before
 * `expiredBeforeMs` restarts at `nowMs` with a count of 1.
 */
export async function recordFailure(
  trx: Kysely<PlatformDB>,
  key: string,
  nowMs: number,
  expiredBeforeMs: number,
): Promise<void> {
  await trx
    .insertInto("login_failures")
    .values({ username_key: key, failures: 1, window_start_ms: nowMs })
    .onConflict((oc) =>
      oc.column("username_key").doUpdateSet({
        failures: sql<number>`CASE WHEN login_failures.window_start_ms < ${expiredBeforeMs} THEN 1 ELSE login_failures.failures + 1 END`,
        window_start_ms: sql<number>`CASE WHEN login_failures.window_start_ms < ${expiredBeforeMs} THEN ${nowMs} ELSE login_failures.window_start_ms END`,
      }),
    )
    .execute();
}

export async function clearFailures(trx: Kysely<PlatformDB>, key: string): Promise<void> {
  await trx.deleteFrom("login_failures").where("username_key", "=", key).execute();
}

/** Forgets windows that ended: the table holds at most one window's worth of failing usernames. */
export async function pruneFailures(trx: Kysely<PlatformDB>, expiredBeforeMs: number): Promise<void> {
  await trx.deleteFrom("login_failures").where("window_start_ms", "<", expiredBeforeMs).execute();
}
