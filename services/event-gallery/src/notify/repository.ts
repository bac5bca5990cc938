import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** Every SQL statement of host push subscriptions (issue 27, item 6). */
type Db = Kysely<GalleryDB>;

export interface SubscriptionRow {
  endpoint: string;
  p256dh: string;
  auth: string;
}

/** Insert or take over an endpoint (a browser re-subscribing, or another host on one device). */
export async function upsertSubscription(
  db: Db,
  userId: string,
  s: SubscriptionRow,
  now: string,
): Promise<void> {
  await db
    .insertInto("push_subscriptions")
    .values({ ...s, user_id: userId, created_at: now })
    .onConflict((oc) =>
      oc.column("endpoint").doUpdateSet({ user_id: userId, p256dh: s.p256dh, auth: s.auth }),
    )
    .execute();
}

export async function deleteSubscription(db: Db, endpoint: string, userId?: string): Promise<void> {
  let q = db.deleteFrom("push_subscriptions").where("endpoint", "=", endpoint);
  if (userId) q = q.where("user_id", "=", userId);
  await q.execute();
}

/** Subscriptions of users who are hosts or the admin now and not banned. */
export async function activeSubscriptions(db: Db): Promise<SubscriptionRow[]> {
  return db
    .selectFrom("push_subscriptions as p")
    .innerJoin("users as u", "u.id", "p.user_id")
    .select(["p.endpoint", "p.p256dh", "p.auth"])
    .where("u.role", "in", ["host", "admin"])
    .where("u.is_banned", "=", 0)
    .execute();
}

/**
 * The shared one-per-window claim: true for exactly one caller, in any process. A subscription is
 * claimed when it never had "uploads waiting", or had it at or before `cutoff` and before the
 * newest pending upload (`newest`), so a quiet queue is not announced twice.
 */
export async function claimPendingSlot(
  db: Db,
  endpoint: string,
  t: { now: string; cutoff: string; newest: string },
): Promise<boolean> {
  const r = await db
    .updateTable("push_subscriptions")
    .set({ last_pending_at: t.now })
    .where("endpoint", "=", endpoint)
    .where((eb) =>
      eb.or([
        eb("last_pending_at", "is", null),
        eb.and([eb("last_pending_at", "<=", t.cutoff), eb("last_pending_at", "<", t.newest)]),
      ]),
    )
    .executeTakeFirst();
  return Number(r.numUpdatedRows) === 1;
}

/** When the newest pending upload arrived (uploads of banned or hidden users left out). */
export async function newestPendingAt(db: Db): Promise<string | null> {
  const row = await db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select((eb) => eb.fn.max("u.created_at").as("at"))
    .where("u.approval", "=", "pending")
    .where("u.deleted_at", "is", null)
    .where("us.is_banned", "=", 0)
    .where("us.uploads_hidden_at", "is", null)
    .executeTakeFirst();
  const at = row?.at as unknown;
  if (at === null || at === undefined) return null;
  return at instanceof Date ? at.toISOString() : new Date(String(at)).toISOString();
}

/** Guests whose PIN-reset request is still open. */
export async function countPinResetRequests(db: Db): Promise<number> {
  const row = await db
    .selectFrom("users")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("pin_reset_requested_at", "is not", null)
    .where("role", "!=", "admin")
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
