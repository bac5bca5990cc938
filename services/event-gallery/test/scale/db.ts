import { toIso } from "@app/kit/clock";
import { createTestDatabase } from "@app/kit/db/testing";
import { migrations } from "../../src/db/migrations/index.js";
import type { GalleryDB } from "../../src/db/schema.js";

/** A migrated gallery database on the selected backend, and a way to add bare user rows. */
export async function galleryDb() {
  const t = await createTestDatabase<GalleryDB>(migrations);
  return {
    ...t,
    async users(...ids: string[]) {
      const now = toIso(Date.now());
      for (const id of ids)
        await t.database.db
          .insertInto("users")
          .values({ id, display_name: id, display_name_key: id, created_at: now, updated_at: now })
          .execute();
    },
  };
}
