import type { Dialect, Kysely } from "@app/kit/db";
import type { GalleryDB, Role } from "../db/schema.js";

/** Every SQL statement of host moderation (its audit rows: audit/repository.ts). */
type Db = Kysely<GalleryDB>;

/** Users with their live upload counts, oldest account first (the host's guest list). */
export function usersWithUploadCounts(db: Db) {
  return db
    .selectFrom("users")
    .select((eb) => [
      "users.id",
      "users.display_name",
      "users.role",
      "users.is_banned",
      "users.pin_reset_requested_at",
      "users.pin_locked_until",
      eb
        .selectFrom("uploads")
        .select(eb.fn.countAll<number>().as("n"))
        .whereRef("uploads.user_id", "=", "users.id")
        .where("uploads.deleted_at", "is", null)
        .as("upload_count"),
    ])
    .orderBy("users.created_at")
    .orderBy("users.id")
    .execute();
}

/** The target of a moderation action, row-locked until the caller's transaction ends. */
export function lockUser(
  trx: Db,
  dialect: Dialect,
  id: string,
): Promise<{ id: string; role: Role; is_banned: number; display_name: string } | undefined> {
  return dialect
    .forUpdate(
      trx.selectFrom("users").select(["id", "role", "is_banned", "display_name"]).where("id", "=", id),
    )
    .executeTakeFirst();
}

/** The columns of the contract's `user` object. */
export function userViewRow(db: Db, id: string) {
  return db
    .selectFrom("users")
    .select(["id", "display_name", "role", "is_banned"])
    .where("id", "=", id)
    .executeTakeFirstOrThrow();
}

export async function setBan(trx: Db, id: string, banned: boolean, now: string): Promise<void> {
  await trx
    .updateTable("users")
    .set({
      is_banned: banned ? 1 : 0,
      uploads_hidden_at: banned ? now : null,
      // /feed/delta reports unbans after this time.
      unhidden_at: banned ? null : now,
      updated_at: now,
    })
    .where("id", "=", id)
    .execute();
}

export async function setRole(trx: Db, id: string, role: Role, now: string): Promise<void> {
  await trx.updateTable("users").set({ role, updated_at: now }).where("id", "=", id).execute();
}

/** A new PIN hash; clears the lock, the failure streak and the pending request. */
export async function storeResetPin(trx: Db, id: string, pinHash: string, now: string): Promise<void> {
  await trx
    .updateTable("users")
    .set({
      recovery_pin_hash: pinHash,
      failed_pin_attempts: 0,
      last_failed_pin_at: null,
      pin_locked_until: null,
      pin_reset_requested_at: null,
      updated_at: now,
    })
    .where("id", "=", id)
    .execute();
}

/** A live (not soft-deleted) upload, row-locked for a takedown. */
export function lockLiveUpload(trx: Db, dialect: Dialect, id: string) {
  return dialect
    .forUpdate(
      trx
        .selectFrom("uploads")
        .select(["id", "user_id", "original_size_bytes"])
        .where("id", "=", id)
        .where("deleted_at", "is", null),
    )
    .executeTakeFirst();
}

/** A live comment, row-locked for a host removal. */
export function lockLiveComment(trx: Db, dialect: Dialect, id: string) {
  return dialect
    .forUpdate(
      trx
        .selectFrom("comments")
        .select(["id", "upload_id", "user_id"])
        .where("id", "=", id)
        .where("deleted_at", "is", null),
    )
    .executeTakeFirst();
}
