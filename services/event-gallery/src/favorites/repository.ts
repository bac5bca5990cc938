import type { Kysely } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";
import { visibleUpload } from "../feed/visibility-repository.js";

/** Every SQL statement of favourites and highlights (issue 27). */
type Db = Kysely<GalleryDB>;

export interface PageKey {
  created_at: string;
  id: string;
}

const isoOf = (v: unknown) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());

/** Insert or delete a star; idempotent. */
export async function setFavoriteRow(db: Db, userId: string, uploadId: string, on: boolean, now: string) {
  if (on)
    await db
      .insertInto("favorites")
      .values({ user_id: userId, upload_id: uploadId, created_at: now })
      .onConflict((oc) => oc.columns(["user_id", "upload_id"]).doNothing())
      .execute();
  else
    await db
      .deleteFrom("favorites")
      .where("user_id", "=", userId)
      .where("upload_id", "=", uploadId)
      .execute();
}

/**
 * Visible uploads newest first, strictly before `before`: the user's favourites (`favoritesOf`),
 * or the highlights (`highlights`); `ownerId` limits them to one uploader (upload-only mode).
 */
export async function pageOf(
  db: Db,
  which: { favoritesOf: string } | { highlights: true },
  ownerId: string | null,
  before: PageKey | null,
  limit: number,
): Promise<PageKey[]> {
  let q = db
    .selectFrom("uploads as u")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select(["u.id", "u.created_at"])
    .where(visibleUpload("u", "us"));
  if ("favoritesOf" in which) {
    const userId = which.favoritesOf;
    q = q.where(({ exists, selectFrom }) =>
      exists(
        selectFrom("favorites as f")
          .select("f.upload_id")
          .whereRef("f.upload_id", "=", "u.id")
          .where("f.user_id", "=", userId),
      ),
    );
  } else q = q.where("u.highlighted_at", "is not", null);
  if (ownerId !== null) q = q.where("u.user_id", "=", ownerId);
  if (before)
    q = q.where((eb) => eb(eb.refTuple("u.created_at", "u.id"), "<", eb.tuple(before.created_at, before.id)));
  const rows = await q.orderBy("u.created_at", "desc").orderBy("u.id", "desc").limit(limit).execute();
  return rows.map((r) => ({ id: r.id, created_at: isoOf(r.created_at) }));
}

/** The user's visible favourites with their originals, oldest first (the zip's order). */
export async function favoriteOriginals(db: Db, userId: string, ownerId: string | null) {
  let q = db
    .selectFrom("favorites as f")
    .innerJoin("uploads as u", "u.id", "f.upload_id")
    .innerJoin("users as us", "us.id", "u.user_id")
    .select(["u.id", "u.user_id", "us.display_name", "u.mime_type", "u.original_path", "u.created_at"])
    .where("f.user_id", "=", userId)
    .where(visibleUpload("u", "us"))
    .where("u.original_path", "is not", null)
    .where("u.original_path", "!=", "");
  if (ownerId !== null) q = q.where("u.user_id", "=", ownerId);
  const rows = await q.orderBy("u.created_at").orderBy("u.id").execute();
  return rows.map((r) => ({
    ...r,
    original_path: r.original_path as string,
    created_at: isoOf(r.created_at),
  }));
}

/** Set or clear a highlight; touches updated_at so cached pages and deltas carry it. True when it changed. */
export async function setHighlight(db: Db, uploadId: string, on: boolean, now: string): Promise<boolean> {
  const r = await db
    .updateTable("uploads")
    .set({ highlighted_at: on ? now : null, updated_at: now })
    .where("id", "=", uploadId)
    .where("highlighted_at", on ? "is" : "is not", null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}
