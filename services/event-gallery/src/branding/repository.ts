import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** SQL of the event's cover photo (columns of the single event row, migration 007). */
type Db = Kysely<GalleryDB>;

export interface CoverRow {
  cover_path: string | null;
  cover_mime: string | null;
  cover_updated_at: string | null;
}

export function readCover(db: Db): Promise<CoverRow> {
  return db
    .selectFrom("event")
    .select(["cover_path", "cover_mime", "cover_updated_at"])
    .where("id", "=", 1)
    .executeTakeFirstOrThrow();
}

export async function writeCover(db: Db, cover: CoverRow): Promise<void> {
  await db.updateTable("event").set(cover).where("id", "=", 1).execute();
}
