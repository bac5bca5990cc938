import type { Database, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

type Db = Kysely<PlatformDB>;

/** SQL for kv_entries (values are JSON text). */
export function kvRepo(database: Database<PlatformDB>) {
  const base = (appId: string, collection: string) =>
    database.db.selectFrom("kv_entries").where("app_id", "=", appId).where("collection", "=", collection);
  return {
    /** The JSON text stored under the key, or null. */
    async value(appId: string, collection: string, key: string): Promise<string | null> {
      const r = await base(appId, collection).select("value").where("key", "=", key).executeTakeFirst();
      return r?.value ?? null;
    },
    async has(appId: string, collection: string, key: string): Promise<boolean> {
      const r = await base(appId, collection).select("key").where("key", "=", key).executeTakeFirst();
      return r !== undefined;
    },
    async upsert(trx: Db, appId: string, collection: string, key: string, json: string, now: string) {
      await trx
        .insertInto("kv_entries")
        .values({ app_id: appId, collection, key, value: json, updated_at: now })
        .onConflict((oc) =>
          oc.columns(["app_id", "collection", "key"]).doUpdateSet({ value: json, updated_at: now }),
        )
        .execute();
    },
    async delete(trx: Db, appId: string, collection: string, key: string): Promise<boolean> {
      const r = await trx
        .deleteFrom("kv_entries")
        .where("app_id", "=", appId)
        .where("collection", "=", collection)
        .where("key", "=", key)
        .executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
    /** Keys starting with `prefix`, after `after`, in key order, at most `limit` rows. */
    async list(
      appId: string,
      collection: string,
      opts: { prefix?: string | undefined; after?: string | undefined; limit: number },
    ): Promise<{ key: string; value: string }[]> {
      let q = base(appId, collection).select(["key", "value"]).orderBy("key").limit(opts.limit);
      const prefix = opts.prefix;
      if (prefix)
        q = q.where((eb) => eb(eb.fn("substr", ["key", eb.val(1), eb.val(prefix.length)]), "=", prefix));
      if (opts.after) q = q.where("key", ">", opts.after);
      return q.execute();
    },
  };
}
export type KvRepo = ReturnType<typeof kvRepo>;
