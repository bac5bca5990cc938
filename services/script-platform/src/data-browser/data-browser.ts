import type { Database } from "@app/kit/db";
import { AppError, notFound } from "@app/kit/errors";
import type { PlatformDB } from "../db/schema.js";
import { docsOps } from "../sdk/docs.js";
import { kvOps } from "../sdk/kv.js";
import type { SdkDeps } from "../sdk/types.js";
import { dataBrowserRepo } from "./data-browser-repository.js";

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
/** The page of `rows` (read with one extra) and the cursor after its last row. */
function toPage<R extends { collection: string }, T>(
  rows: R[],
  limit: number,
  keyOf: (r: R) => string,
  map: (r: R) => T,
): { items: T[]; next_cursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    items: page.map(map),
    next_cursor: rows.length > limit && last ? encodeCursor(last.collection, keyOf(last)) : null,
  };
}

export function createDataBrowser(deps: { database: Database<PlatformDB>; sdk: SdkDeps }) {
  const d = deps.database.dialect;
  const repo = dataBrowserRepo(deps.database);
  const call = (appId: string) => ({ appId, scriptId: "", executionId: "", principal: null, depth: 0 });
  const rowsQuery = (q: BrowseQuery) => ({
    collection: q.collection,
    prefix: q.prefix,
    after: decodeCursor(q.cursor),
    take: q.limit + 1,
  });
  return {
    async kv(appId: string, q: BrowseQuery) {
      return toPage(
        await repo.kvRows(appId, rowsQuery(q)),
        q.limit,
        (r) => r.key,
        (r) => ({
          collection: r.collection,
          key: r.key,
          value: JSON.parse(r.value) as unknown,
          updated_at: d.fromTimestamp(r.updated_at),
        }),
      );
    },
    async kvDelete(appId: string, collection: string, key: string): Promise<void> {
      const existed = await kvOps(deps.sdk, call(appId)).delete(collection, key);
      if (!existed) throw notFound("No such kv entry.", "not_found");
    },
    async docs(appId: string, q: BrowseQuery) {
      return toPage(
        await repo.docRows(appId, rowsQuery(q)),
        q.limit,
        (r) => r.id,
        (r) => ({
          collection: r.collection,
          id: r.id,
          data: JSON.parse(r.body) as unknown,
          created_at: d.fromTimestamp(r.created_at),
          updated_at: d.fromTimestamp(r.updated_at),
        }),
      );
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
