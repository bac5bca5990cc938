import type { Database } from "@app/kit/db";
import { AppError, notFound } from "@app/kit/errors";
import type { PlatformDB } from "../db/schema.js";
import { docsOps } from "../sdk/docs.js";
import { kvOps } from "../sdk/kv.js";
import type { SdkDeps } from "../sdk/types.js";

/** Cursor of the data browser: the last (collection, key) of the previous page, base64url JSON. */
function encodeCursor(collection: string, key: string): string {
  return Buffer.from(JSON.stringify([collection, key])).toString("base64url");
}
function decodeCursor(cursor: string | null | undefined): [string, string] | null {
  if (!cursor) return null;
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "string")
      return [v[0], v[1]];
  } catch {
    // fall through
  }
  throw new AppError(422, "validation_failed", "cursor is not a cursor of this list.", { field: "cursor" });
}

export interface BrowseQuery {
  collection?: string | undefined;
  prefix?: string | undefined;
  cursor?: string | undefined;
  limit: number;
}

/**
 * The admin data browser (contract "Authoring"): an app's kv entries and docs, listed with a
 * cursor across or within collections. Deletes go through the SDK's own operations, so they emit
 * the same change events (and fire the same triggers) as a script's delete.
 */
export function createDataBrowser(deps: { database: Database<PlatformDB>; sdk: SdkDeps }) {
  const { database } = deps;
  const d = database.dialect;
  /** Rows after the cursor's (collection, key) in (collection, key) order. */
  const after = <Q>(q: Q, col: "key" | "id", cur: [string, string] | null): Q =>
    cur
      ? // biome-ignore lint/suspicious/noExplicitAny: Kysely expression builder
        (q as any).where((eb: any) =>
          eb.or([
            eb("collection", ">", cur[0]),
            eb.and([eb("collection", "=", cur[0]), eb(col, ">", cur[1])]),
          ]),
        )
      : q;
  const call = (appId: string) => ({ appId, scriptId: "", executionId: "", principal: null, depth: 0 });
  return {
    async kv(appId: string, q: BrowseQuery) {
      let s = database.db
        .selectFrom("kv_entries")
        .select(["collection", "key", "value", "updated_at"])
        .where("app_id", "=", appId)
        .orderBy("collection")
        .orderBy("key")
        .limit(q.limit + 1);
      if (q.collection) s = s.where("collection", "=", q.collection);
      if (q.prefix) s = s.where("key", ">=", q.prefix).where("key", "<", `${q.prefix}\u{10ffff}`);
      s = after(s, "key", decodeCursor(q.cursor));
      const rows = await s.execute();
      const page = rows.slice(0, q.limit);
      const last = page[page.length - 1];
      return {
        items: page.map((r) => ({
          collection: r.collection,
          key: r.key,
          value: JSON.parse(r.value) as unknown,
          updated_at: d.fromTimestamp(r.updated_at),
        })),
        next_cursor: rows.length > q.limit && last ? encodeCursor(last.collection, last.key) : null,
      };
    },
    async kvDelete(appId: string, collection: string, key: string): Promise<void> {
      const existed = await kvOps(deps.sdk, call(appId)).delete(collection, key);
      if (!existed) throw notFound("No such kv entry.", "not_found");
    },
    async docs(appId: string, q: BrowseQuery) {
      let s = database.db
        .selectFrom("docs")
        .select(["collection", "id", "body", "created_at", "updated_at"])
        .where("app_id", "=", appId)
        .orderBy("collection")
        .orderBy("id")
        .limit(q.limit + 1);
      if (q.collection) s = s.where("collection", "=", q.collection);
      s = after(s, "id", decodeCursor(q.cursor));
      const rows = await s.execute();
      const page = rows.slice(0, q.limit);
      const last = page[page.length - 1];
      return {
        items: page.map((r) => ({
          collection: r.collection,
          id: r.id,
          data: JSON.parse(r.body) as unknown,
          created_at: d.fromTimestamp(r.created_at),
          updated_at: d.fromTimestamp(r.updated_at),
        })),
        next_cursor: rows.length > q.limit && last ? encodeCursor(last.collection, last.id) : null,
      };
    },
    async doc(appId: string, collection: string, id: string) {
      const doc = (await docsOps(deps.sdk, call(appId)).get(collection, id)) as {
        id: string;
        data: unknown;
        created_at: string;
        updated_at: string;
      } | null;
      if (!doc) throw notFound("No such document.", "not_found");
      return { collection, ...doc };
    },
    async docDelete(appId: string, collection: string, id: string): Promise<void> {
      const existed = await docsOps(deps.sdk, call(appId)).delete(collection, id);
      if (!existed) throw notFound("No such document.", "not_found");
    },
  };
}
