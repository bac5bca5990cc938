import type { Database, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

type Db = Kysely<PlatformDB>;

/** A stored document: `body` is JSON text; timestamps as the backend returns them. */
export type DocRow = Pick<PlatformDB["docs"], "id" | "body" | "created_at" | "updated_at">;

const COLUMNS = ["id", "body", "created_at", "updated_at"] as const;

/** SQL for the docs table. */
export function docsRepo(database: Database<PlatformDB>) {
  const one = (db: Db, appId: string, collection: string, id: string) =>
    db
      .selectFrom("docs")
      .select(COLUMNS)
      .where("app_id", "=", appId)
      .where("collection", "=", collection)
      .where("id", "=", id);
  return {
    async find(appId: string, collection: string, id: string): Promise<DocRow | null> {
      return (await one(database.db, appId, collection, id).executeTakeFirst()) ?? null;
    },
    /** Inside a write transaction: the document, locked until the transaction ends (PostgreSQL). */
    async lock(trx: Db, appId: string, collection: string, id: string): Promise<DocRow | null> {
      return (await database.dialect.forUpdate(one(trx, appId, collection, id)).executeTakeFirst()) ?? null;
    },
    async insert(trx: Db, appId: string, collection: string, row: DocRow): Promise<void> {
      await trx
        .insertInto("docs")
        .values({ app_id: appId, collection, ...row })
        .execute();
    },
    async setBody(trx: Db, appId: string, collection: string, id: string, body: string, now: string) {
      await trx
        .updateTable("docs")
        .set({ body, updated_at: now })
        .where("app_id", "=", appId)
        .where("collection", "=", collection)
        .where("id", "=", id)
        .execute();
    },
    async delete(trx: Db, appId: string, collection: string, id: string): Promise<void> {
      await trx
        .deleteFrom("docs")
        .where("app_id", "=", appId)
        .where("collection", "=", collection)
        .where("id", "=", id)
        .execute();
    },
    /** By id, after `after`, at most `limit` rows. */
    async list(
      appId: string,
      collection: string,
      opts: { after?: string | undefined; limit: number },
    ): Promise<DocRow[]> {
      let q = database.db
        .selectFrom("docs")
        .select(COLUMNS)
        .where("app_id", "=", appId)
        .where("collection", "=", collection)
        .orderBy("id")
        .limit(opts.limit);
      if (opts.after) q = q.where("id", ">", opts.after);
      return q.execute();
    },
  };
}
export type DocsRepo = ReturnType<typeof docsRepo>;
