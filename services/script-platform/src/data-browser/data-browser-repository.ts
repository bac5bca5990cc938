import type { Database } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

/** One page of the data browser, read in (collection, key|id) order after a cursor. */
export interface RowsQuery {
  collection?: string | undefined;
  prefix?: string | undefined;
  after: [string, string] | null;
  /** Rows to read: a page plus one, so the caller knows whether another page follows. */
  take: number;
}

/** The data browser's SQL: an app's kv entries and docs across or within collections. */
export function dataBrowserRepo(database: Database<PlatformDB>) {
  const { db } = database;
  return {
    kvRows(appId: string, q: RowsQuery) {
      let s = db
        .selectFrom("kv_entries")
        .select(["collection", "key", "value", "updated_at"])
        .where("app_id", "=", appId);
      if (q.collection) s = s.where("collection", "=", q.collection);
      if (q.prefix) s = s.where("key", ">=", q.prefix).where("key", "<", `${q.prefix}\u{10ffff}`);
      const cur = q.after;
      if (cur)
        s = s.where((eb) =>
          eb.or([
            eb("collection", ">", cur[0]),
            eb.and([eb("collection", "=", cur[0]), eb("key", ">", cur[1])]),
          ]),
        );
      return s.orderBy("collection").orderBy("key").limit(q.take).execute();
    },
    docRows(appId: string, q: RowsQuery) {
      let s = db
        .selectFrom("docs")
        .select(["collection", "id", "body", "created_at", "updated_at"])
        .where("app_id", "=", appId);
      if (q.collection) s = s.where("collection", "=", q.collection);
      const cur = q.after;
      if (cur)
        s = s.where((eb) =>
          eb.or([
            eb("collection", ">", cur[0]),
            eb.and([eb("collection", "=", cur[0]), eb("id", ">", cur[1])]),
          ]),
        );
      return s.orderBy("collection").orderBy("id").limit(q.take).execute();
    },
  };
}
