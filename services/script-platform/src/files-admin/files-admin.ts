import type { Database } from "@app/kit/db";
import { notFound } from "@app/kit/errors";
import type { PlatformDB } from "../db/schema.js";
import { blobStore } from "../sdk/blob-store.js";
import { type FileRow, filesRepo } from "../sdk/files-repository.js";
import type { EventSink } from "../sdk/types.js";

/**
 * Admin view of an app's stored files (GET/DELETE /admin/apps/{id}/files[/{collection}/{name}]).
 * Metadata only; a deletion removes the row (emitting the same files `delete` change event a
 * script's files.delete would) and then the blob.
 */
export interface FileMeta {
  collection: string;
  name: string;
  content_type: string;
  size: number;
  sha256: string;
  created_at: string;
  updated_at: string;
}

type Deps = { database: Database<PlatformDB>; filesRoot: string; events: EventSink };

function toMeta(database: Database<PlatformDB>, r: FileRow): FileMeta {
  return {
    collection: String(r.collection),
    name: String(r.name),
    content_type: String(r.content_type),
    size: Number(r.size),
    sha256: String(r.sha256),
    created_at: database.dialect.fromTimestamp(r.created_at),
    updated_at: database.dialect.fromTimestamp(r.updated_at),
  };
}

/** Files of an app, by collection then name; the cursor is opaque (`collection\u0000name`, base64url). */
export async function listFiles(
  deps: Deps,
  appId: string,
  opts: { collection?: string | undefined; cursor?: string | undefined; limit: number },
): Promise<{ items: FileMeta[]; next_cursor: string | null }> {
  let after: { collection: string; name: string } | undefined;
  if (opts.cursor) {
    const [c, n] = Buffer.from(opts.cursor, "base64url").toString("utf8").split("\u0000");
    if (c !== undefined && n !== undefined) after = { collection: c, name: n };
  }
  const rows = await filesRepo(deps.database).inApp(appId, {
    collection: opts.collection,
    after,
    limit: opts.limit + 1,
  });
  const items = rows.slice(0, opts.limit).map((r) => toMeta(deps.database, r));
  const last = items.at(-1);
  return {
    items,
    next_cursor:
      rows.length > opts.limit && last
        ? Buffer.from(`${last.collection}\u0000${last.name}`).toString("base64url")
        : null,
  };
}

export async function getFile(
  deps: Deps,
  appId: string,
  collection: string,
  name: string,
): Promise<FileMeta> {
  const r = await filesRepo(deps.database).find(appId, collection, name);
  if (!r) throw notFound("File not found.", "file_not_found");
  return toMeta(deps.database, r);
}

export async function deleteFile(deps: Deps, appId: string, collection: string, name: string): Promise<void> {
  const { database } = deps;
  const repo = filesRepo(database);
  const path = await database.writeTx(async (trx) => {
    const prev = await repo.lock(trx, appId, collection, name);
    if (!prev) return null;
    await repo.delete(trx, appId, collection, name);
    const meta = toMeta(database, prev);
    await deps.events.change(trx, {
      appId,
      kind: "files",
      collection,
      operation: "delete",
      payload: { operation: "delete", ...meta },
      depth: 0,
    });
    return String(prev.path);
  });
  if (path === null) throw notFound("File not found.", "file_not_found");
  // After the commit: a blob no row points at is garbage, never damage.
  await blobStore(deps.filesRoot).remove(path);
}
