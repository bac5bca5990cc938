import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "./db/schema.js";

/** The SQL behind the gallery's /metrics gauges (read on each scrape, through the reader). */

/** Uploads still waiting for their derivatives (the derivative worker's queue). */
export async function derivativeBacklog(db: Kysely<GalleryDB>): Promise<number> {
  const row = await db
    .selectFrom("uploads")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("compression_status", "=", "processing")
    .where("deleted_at", "is", null)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}
