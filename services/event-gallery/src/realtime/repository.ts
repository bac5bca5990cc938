import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";

/** Which of `ids` are hosts or the admin now (live rows: a demoted host drops out at once). */
export async function hostIdsAmong(db: Kysely<GalleryDB>, ids: readonly string[]): Promise<Set<string>> {
  const rows = await db
    .selectFrom("users")
    .select("id")
    .where("id", "in", ids)
    .where("role", "in", ["host", "admin"])
    .execute();
  return new Set(rows.map((r) => r.id));
}
