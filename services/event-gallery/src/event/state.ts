import type { Clock } from "@app/kit/clock";
import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

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

/**
 * The keepsake is downloadable only when released and every export job is done at the current
 * epoch. Derived on read, never stored.
 */
export async function isKeepsakeReady(db: Kysely<GalleryDB>, event: EventRow): Promise<boolean> {
  if (!event.export_released_at) return false;
  const jobs = await db.selectFrom("export_jobs").select(["status", "epoch"]).execute();
  return jobs.length > 0 && jobs.every((j) => j.status === "done" && j.epoch === event.export_epoch);
}

/** The contract's `event` object: `{name, uploads_locked, released, keepsake_ready}`. */
export interface EventView {
  name: string;
  uploads_locked: boolean;
  released: boolean;
  keepsake_ready: boolean;
}

export async function eventView(
  db: Kysely<GalleryDB>,
  settings: { get(key: "event_name"): Promise<string> },
): Promise<EventView> {
  const event = await getEvent(db);
  return {
    name: await settings.get("event_name"),
    uploads_locked: event.uploads_locked_at !== null,
    released: event.export_released_at !== null,
    keepsake_ready: await isKeepsakeReady(db, event),
  };
}
