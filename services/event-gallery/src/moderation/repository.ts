import type { Database, Dialect, Kysely } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { GalleryDB, Role } from "../db/schema.js";

/** Every SQL statement of host moderation and the host audit table. */
type Db = Kysely<GalleryDB>;

export type AuditAction =
  | "ban"
  | "unban"
  | "promote"
  | "demote"
  | "reset_pin"
  | "remove_upload"
  | "remove_comment"
  | "approve_upload";

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

export async function recordAudit(
  trx: Db,
  database: Database<GalleryDB>,
  entry: {
    actorId: string;
    action: AuditAction;
    targetType: "user" | "upload" | "comment";
    targetId: string;
    at: string;
    details?: Record<string, unknown>;
  },
): Promise<void> {
  await trx
    .insertInto("host_audit")
    .values({
      id: newId(),
      actor_id: entry.actorId,
      action: entry.action,
      target_type: entry.targetType,
      target_id: entry.targetId,
      details: entry.details ? database.dialect.json(entry.details) : null,
      created_at: entry.at,
    })
    .execute();
}

/** Audit rows newest first, keyset-paginated on (created_at, id), strictly before `before`. */
export async function auditRows(db: Db, limit: number, before: [string, string] | null) {
  let q = db
    .selectFrom("host_audit")
    .leftJoin("users", "users.id", "host_audit.actor_id")
    .select([
      "host_audit.id",
      "host_audit.actor_id",
      "users.display_name as actor_name",
      "host_audit.action",
      "host_audit.target_type",
      "host_audit.target_id",
      "host_audit.created_at",
    ])
    .orderBy("host_audit.created_at", "desc")
    .orderBy("host_audit.id", "desc")
    .limit(limit);
  if (before) {
    const [at, id] = before;
    q = q.where((eb) =>
      eb.or([
        eb("host_audit.created_at", "<", at),
        eb.and([eb("host_audit.created_at", "=", at), eb("host_audit.id", "<", id)]),
      ]),
    );
  }
  return q.execute();
}
