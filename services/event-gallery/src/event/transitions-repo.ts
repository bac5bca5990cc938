import type { Dialect, Kysely } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { GalleryDB } from "../db/schema.js";

/** Writes to the event row made by the host transitions (lock, unlock, release, reopen). */

export async function lockEventRow(trx: Kysely<GalleryDB>, dialect: Dialect): Promise<void> {
  await dialect.forUpdate(trx.selectFrom("event").select("id").where("id", "=", 1)).execute();
}

export async function setUploadsLocked(trx: Kysely<GalleryDB>, lockedAt: string | null): Promise<void> {
  await trx.updateTable("event").set({ uploads_locked_at: lockedAt }).where("id", "=", 1).execute();
}

/**
 * Set or clear the release; export_epoch is bumped in the same statement, so every change to
 * export_released_at moves the epoch (seed: "bumped in the same write").
 */
export async function setReleased(
  trx: Kysely<GalleryDB>,
  fields: { export_released_at: string | null; uploads_locked_at: string | null },
): Promise<void> {
  await trx
    .updateTable("event")
    .set((eb) => ({ ...fields, export_epoch: eb("export_epoch", "+", 1) }))
    .where("id", "=", 1)
    .execute();
}

/** Host moderation actions are recorded in the audit table. */
export async function auditEventAction(
  trx: Kysely<GalleryDB>,
  actorId: string,
  action: string,
  now: string,
): Promise<void> {
  await trx
    .insertInto("host_audit")
    .values({
      id: newId(),
      actor_id: actorId,
      action,
      target_type: "event",
      target_id: null,
      details: null,
      created_at: now,
    })
    .execute();
}
