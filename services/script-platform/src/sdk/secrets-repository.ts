import type { Database } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

/** SQL for the secrets table (values arrive and leave sealed; see secrets.ts). */
export function secretsRepo(database: Database<PlatformDB>) {
  return {
    async sealed(appId: string, name: string): Promise<string | null> {
      const r = await database.db
        .selectFrom("secrets")
        .select("value_enc")
        .where("app_id", "=", appId)
        .where("name", "=", name)
        .executeTakeFirst();
      return r?.value_enc ?? null;
    },
    async upsert(appId: string, name: string, sealed: string, now: string): Promise<void> {
      await database.db
        .insertInto("secrets")
        .values({ app_id: appId, name, value_enc: sealed, updated_at: now })
        .onConflict((oc) =>
          oc.columns(["app_id", "name"]).doUpdateSet({ value_enc: sealed, updated_at: now }),
        )
        .execute();
    },
    async delete(appId: string, name: string): Promise<boolean> {
      const r = await database.db
        .deleteFrom("secrets")
        .where("app_id", "=", appId)
        .where("name", "=", name)
        .executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
    /** Names and updated_at (as stored) by name; never the values. */
    async names(appId: string): Promise<{ name: string; updated_at: string }[]> {
      return database.db
        .selectFrom("secrets")
        .select(["name", "updated_at"])
        .where("app_id", "=", appId)
        .orderBy("name")
        .execute();
    },
  };
}
export type SecretsRepo = ReturnType<typeof secretsRepo>;
