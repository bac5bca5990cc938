import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** Every SQL statement of the settings store. */
export function listConfig(db: Kysely<GalleryDB>) {
  return db.selectFrom("config").select(["key", "value"]).execute();
}

export async function upsertConfig(db: Kysely<GalleryDB>, key: string, json: string, now: string) {
  await db
    .insertInto("config")
    .values({ key, value: json, updated_at: now })
    .onConflict((oc) => oc.column("key").doUpdateSet({ value: json, updated_at: now }))
    .execute();
}
