import type { Dialect, Kysely } from "@app/kit/db";
import type { GalleryDB, Role } from "../db/schema.js";

/** Every SQL statement of join, recover, PIN-reset requests and the admin account. */
type Db = Kysely<GalleryDB>;

export function findUserByKey(db: Db, key: string) {
  return db.selectFrom("users").selectAll().where("display_name_key", "=", key).executeTakeFirst();
}

export function findUserById(db: Db, id: string) {
  return db.selectFrom("users").selectAll().where("id", "=", id).executeTakeFirst();
}

export function findUserByJoinId(db: Db, clientJoinId: string) {
  return db.selectFrom("users").selectAll().where("client_join_id", "=", clientJoinId).executeTakeFirst();
}

export function findAdmin(db: Db) {
  return db
    .selectFrom("users")
    .selectAll()
    .where("role", "=", "admin")
    .orderBy("created_at")
    .executeTakeFirst();
}

/** Whether the user's PIN reset request is still unanswered. */
export async function pinResetPending(db: Db, id: string): Promise<boolean> {
  const row = await db
    .selectFrom("users")
    .select("pin_reset_requested_at")
    .where("id", "=", id)
    .executeTakeFirst();
  return Boolean(row?.pin_reset_requested_at);
}

/** The user's role, or undefined for an unknown id. */
export async function userRole(db: Db, id: string): Promise<{ role: Role } | undefined> {
  return db.selectFrom("users").select(["role"]).where("id", "=", id).executeTakeFirst();
}

/** A new account: a guest (PIN, optional join id) or the admin (password); counters take their defaults. */
export async function insertUser(
  trx: Db,
  user: {
    id: string;
    name: string;
    key: string;
    role?: "admin";
    pinHash: string | null;
    passwordHash: string | null;
    clientJoinId: string | null;
    now: string;
  },
): Promise<void> {
  await trx
    .insertInto("users")
    .values({
      id: user.id,
      display_name: user.name,
      display_name_key: user.key,
      ...(user.role ? { role: user.role } : {}),
      recovery_pin_hash: user.pinHash,
      password_hash: user.passwordHash,
      last_failed_pin_at: null,
      pin_locked_until: null,
      pin_reset_requested_at: null,
      client_join_id: user.clientJoinId,
      uploads_hidden_at: null,
      created_at: user.now,
      updated_at: user.now,
    })
    .execute();
}

export async function setPinHash(trx: Db, id: string, pinHash: string, now: string): Promise<void> {
  await trx
    .updateTable("users")
    .set({ recovery_pin_hash: pinHash, updated_at: now })
    .where("id", "=", id)
    .execute();
}

/** A correct PIN ends the failure streak. */
export async function clearPinFailures(trx: Db, id: string, now: string): Promise<void> {
  await trx
    .updateTable("users")
    .set({ failed_pin_attempts: 0, last_failed_pin_at: null, updated_at: now })
    .where("id", "=", id)
    .execute();
}

/** The failure streak, row-locked until the caller's transaction ends. */
export function lockPinStreak(trx: Db, dialect: Dialect, id: string) {
  return dialect
    .forUpdate(
      trx.selectFrom("users").select(["failed_pin_attempts", "last_failed_pin_at"]).where("id", "=", id),
    )
    .executeTakeFirstOrThrow();
}

/** Store one more failure; with `lockedUntil` the account is locked and the streak starts over. */
export async function storePinFailure(
  trx: Db,
  id: string,
  streak: number,
  lockedUntil: string | null,
  now: string,
): Promise<void> {
  await trx
    .updateTable("users")
    .set({
      failed_pin_attempts: lockedUntil ? 0 : streak,
      last_failed_pin_at: now,
      ...(lockedUntil ? { pin_locked_until: lockedUntil } : {}),
      updated_at: now,
    })
    .where("id", "=", id)
    .execute();
}

export async function markPinResetRequested(trx: Db, id: string, now: string): Promise<void> {
  await trx
    .updateTable("users")
    .set({ pin_reset_requested_at: now, updated_at: now })
    .where("id", "=", id)
    .execute();
}

export async function renameUser(trx: Db, id: string, name: string, key: string, now: string): Promise<void> {
  await trx
    .updateTable("users")
    .set({ display_name: name, display_name_key: key, updated_at: now })
    .where("id", "=", id)
    .execute();
}

/** The admin's display name from config, and a new password hash when one is given. */
export async function updateAdmin(
  trx: Db,
  id: string,
  admin: { name: string; key: string; passwordHash: string | null; now: string },
): Promise<void> {
  await trx
    .updateTable("users")
    .set({
      display_name: admin.name,
      display_name_key: admin.key,
      ...(admin.passwordHash ? { password_hash: admin.passwordHash } : {}),
      updated_at: admin.now,
    })
    .where("id", "=", id)
    .execute();
}
