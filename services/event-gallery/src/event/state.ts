import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";
import { type EventRow, exportJobStates, getEvent } from "./repository.js";

// Callers outside event/ (derivatives, uploads, export, app start-up) import these from here.
export { bumpEpochIfReleased, type EventRow, ensureEventRow, getEvent } from "./repository.js";

/**
 * The keepsake is downloadable only when released and every export job is done at the current
 * epoch. Derived on read, never stored.
 */
export async function isKeepsakeReady(db: Kysely<GalleryDB>, event: EventRow): Promise<boolean> {
  if (!event.export_released_at) return false;
  const jobs = await exportJobStates(db);
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
