import type { Database, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

type Db = Kysely<PlatformDB>;

/** A file's metadata row (timestamps as the backend returns them: dialect.fromTimestamp). */
export type FileRow = Omit<PlatformDB["files"], "app_id">;

const COLUMNS = [
  "collection",
  "name",
  "content_type",
  "size",
  "sha256",
  "path",
  "created_at",
  "updated_at",
] as const;

/** SQL for file metadata rows (the SDK's files.* and the admin files view); the bytes live in the blob store. */
export function filesRepo(database: Database<PlatformDB>) {
  const d = database.dialect;
  const one = (db: Db, appId: string, collection: string, name: string) =>
    db
      .selectFrom("files")
      .select(COLUMNS)
      .where("app_id", "=", appId)
      .where("collection", "=", collection)
      .where("name", "=", name);
  return {
    async find(appId: string, collection: string, name: string): Promise<FileRow | null> {
      return (await one(database.db, appId, collection, name).executeTakeFirst()) ?? null;
    },
    /** Inside a write transaction: the row, locked until the transaction ends (PostgreSQL). */
    async lock(trx: Db, appId: string, collection: string, name: string): Promise<FileRow | null> {
      return (await d.forUpdate(one(trx, appId, collection, name)).executeTakeFirst()) ?? null;
    },
    async insert(trx: Db, appId: string, row: FileRow): Promise<void> {
      await trx
        .insertInto("files")
        .values({ app_id: appId, ...row })
        .execute();
    },
    async update(
      trx: Db,
      appId: string,
      collection: string,
      name: string,
      set: Pick<FileRow, "content_type" | "size" | "sha256" | "path" | "updated_at">,
    ): Promise<void> {
      await trx
        .updateTable("files")
        .set({
          content_type: set.content_type,
          size: set.size,
          sha256: set.sha256,
          path: set.path,
          updated_at: set.updated_at,
        })
        .where("app_id", "=", appId)
        .where("collection", "=", collection)
        .where("name", "=", name)
        .execute();
    },
    async delete(trx: Db, appId: string, collection: string, name: string): Promise<void> {
      await trx
        .deleteFrom("files")
        .where("app_id", "=", appId)
        .where("collection", "=", collection)
        .where("name", "=", name)
        .execute();
    },
    /** One collection by name: names starting with `prefix`, after `after`, at most `limit` rows. */
    async inCollection(
      appId: string,
      collection: string,
      opts: { prefix?: string | undefined; after?: string | undefined; limit: number },
    ): Promise<FileRow[]> {
      let q = database.db
        .selectFrom("files")
        .select(COLUMNS)
        .where("app_id", "=", appId)
        .where("collection", "=", collection)
        .orderBy("name")
        .limit(opts.limit);
      const prefix = opts.prefix;
      if (prefix)
        q = q.where((eb) => eb(eb.fn("substr", ["name", eb.val(1), eb.val(prefix.length)]), "=", prefix));
      if (opts.after) q = q.where("name", ">", opts.after);
      return q.execute();
    },
    /** An app's files by collection then name, after the (collection, name) `after`, at most `limit` rows. */
    async inApp(
      appId: string,
      opts: {
        collection?: string | undefined;
        after?: { collection: string; name: string } | undefined;
        limit: number;
      },
    ): Promise<FileRow[]> {
      let q = database.db.selectFrom("files").select(COLUMNS).where("app_id", "=", appId);
      if (opts.collection !== undefined) q = q.where("collection", "=", opts.collection);
      const after = opts.after;
      if (after)
        q = q.where((eb) =>
          eb.or([
            eb("collection", ">", after.collection),
            eb.and([eb("collection", "=", after.collection), eb("name", ">", after.name)]),
          ]),
        );
      return q.orderBy("collection").orderBy("name").limit(opts.limit).execute();
    },
  };
}
export type FilesRepo = ReturnType<typeof filesRepo>;
