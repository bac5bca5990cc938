import type { Database } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";
import { groupRead } from "../limits/group-read.js";
import { likedAmong, likedPairs } from "./repository.js";

/** The ids among `ids` that `viewer` likes. */
export type LikedReader = (viewer: string, ids: readonly string[]) => Promise<Set<string>>;

/**
 * `liked_by_me` of concurrent /feed requests read together (groupRead): one statement for every
 * viewer and page id in the batch, then each request keeps only its own viewer's likes among its
 * own page's ids. A like committed before a request is always seen. One per app instance.
 * SQLite answers synchronously on this thread, so no batch forms there: each request runs the
 * single-viewer statement (cheaper than the two-list form).
 */
export function likedReader(database: Pick<Database<GalleryDB>, "reader" | "dialect">): LikedReader {
  const { reader, dialect } = database;
  if (!dialect.groupsReads) return async (viewer, ids) => likedAmong(reader, viewer, ids);
  const read = groupRead(async (batch: readonly { viewer: string; ids: readonly string[] }[]) => {
    const viewers = new Set(batch.map((w) => w.viewer));
    const ids = new Set(batch.flatMap((w) => w.ids));
    const byViewer = new Map<string, Set<string>>();
    for (const r of await likedPairs(reader, [...viewers], [...ids])) {
      let s = byViewer.get(r.user_id);
      if (!s) {
        s = new Set();
        byViewer.set(r.user_id, s);
      }
      s.add(r.upload_id);
    }
    return batch.map((w) => {
      const all = byViewer.get(w.viewer);
      return new Set(all ? w.ids.filter((id) => all.has(id)) : []);
    });
  });
  return async (viewer, ids) => (ids.length === 0 ? new Set() : read({ viewer, ids }));
}
