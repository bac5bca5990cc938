import type { Database, Selectable } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

/** A registered topic as stored (`external` 0/1; created_at as the backend returns it). */
export type TopicRow = Selectable<PlatformDB["topics"]>;

/** SQL for the topics table. */
export function topicsRepo(database: Database<PlatformDB>) {
  return {
    /** Throws the backend's unique violation when the app already has a topic of this name. */
    async insert(row: TopicRow): Promise<void> {
      await database.writeTx((trx) => trx.insertInto("topics").values(row).execute());
    },
    async find(appId: string, name: string): Promise<TopicRow | null> {
      const r = await database.db
        .selectFrom("topics")
        .selectAll()
        .where("app_id", "=", appId)
        .where("name", "=", name)
        .executeTakeFirst();
      return r ?? null;
    },
    /** By name, after `after`, at most `limit` rows. */
    async list(appId: string, opts: { after?: string | undefined; limit: number }): Promise<TopicRow[]> {
      let q = database.db.selectFrom("topics").selectAll().where("app_id", "=", appId);
      if (opts.after) q = q.where("name", ">", opts.after);
      return q.orderBy("name").limit(opts.limit).execute();
    },
    async delete(appId: string, name: string): Promise<boolean> {
      const r = await database.writeTx((trx) =>
        trx.deleteFrom("topics").where("app_id", "=", appId).where("name", "=", name).executeTakeFirst(),
      );
      return Number(r.numDeletedRows) > 0;
    },
  };
}
export type TopicsRepo = ReturnType<typeof topicsRepo>;
