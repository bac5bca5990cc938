import type { Clock } from "@app/kit/clock";
import type { Dialect, Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** Every SQL statement on the single event row (id = 1). */

export interface EventRow {
  uploads_locked_at: string | null;
  export_released_at: string | null;
  export_epoch: number;
}

/** The single event row (id = 1; app start-up guarantees it exists). */
export async function getEvent(db: Kysely<GalleryDB>): Promise<EventRow> {
  const row = await db
    .selectFrom("event")
    .select(["uploads_locked_at", "export_released_at", "export_epoch"])
    .where("id", "=", 1)
    .executeTakeFirstOrThrow();
  return row;
}

/**
 * After release every content removal invalidates the keepsake: bump export_epoch in the caller's
 * transaction (so the removal and the bump commit together). Returns whether it bumped.
 */
export async function bumpEpochIfReleased(trx: Kysely<GalleryDB>, _clock: Clock): Promise<boolean> {
  const res = await trx
    .updateTable("event")
    .set((eb) => ({ export_epoch: eb("export_epoch", "+", 1) }))
    .where("id", "=", 1)
    .where("export_released_at", "is not", null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Create the event row on first start. */
export async function ensureEventRow(db: Kysely<GalleryDB>, clock: Clock): Promise<void> {
  await db
    .insertInto("event")
    .values({ id: 1, uploads_locked_at: null, export_released_at: null, created_at: clock.iso() })
    .onConflict((oc) => oc.column("id").doNothing())
    .execute();
}

/** Status and epoch of every export job (keepsake readiness is derived from them). */
export function exportJobStates(db: Kysely<GalleryDB>) {
  return db.selectFrom("export_jobs").select(["status", "epoch"]).execute();
}

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
