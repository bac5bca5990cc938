import { stat } from "node:fs/promises";
import type { Readable } from "node:stream";
import { toIso } from "@app/kit/clock";
import { notFound, tooManyRequests, unauthorized } from "@app/kit/errors";
import yazl from "yazl";
import { recordAudit } from "../audit/repository.js";
import { createDbTickets } from "../auth/tickets.js";
import type { AuthedUser, GalleryContext } from "../context.js";
import { folderNames, galleryEntryName } from "../export/entries.js";
import { mediaFile } from "../export/files.js";
import { sessionIsLive } from "../export/repository.js";
import { clampLimit, deltaCursorNow, FEED_LIMIT_DEFAULT } from "../feed/feed.js";
import { decodePageKey, encodePageKey } from "../feed/page-key.js";
import { type FeedItem, loadFeedItems } from "../feed/serialize.js";
import { restrictedToOwn } from "../feed/upload-only.js";
import { userRole } from "../identity/repository.js";
import { findVisibleUpload } from "../social/repository.js";
import { SOCIAL_WRITES_PER_MIN } from "../social/service.js";
import * as repo from "./repository.js";

/**
 * Favourites and highlights (issue 27, contract "Live event"). A favourite is a guest's private
 * star (banned users may still star: nobody else sees it); the caller's favourites list and a zip
 * of their visible originals, streamed with a single-use ticket like the keepsake. A highlight is
 * a host's mark the slideshow can restrict itself to.
 */

export const FAVORITES_ZIP = "Favorites.zip";
const TICKET_KIND = "favorites";

const uploadNotFound = () => notFound("No such upload.");

export interface ListPage {
  items: FeedItem[];
  next_cursor: string | null;
  delta_cursor: string;
}

/** What favourites and highlights need of the gallery context. */
export type FavoritesDeps = Pick<
  GalleryContext,
  "database" | "clock" | "limiter" | "settings" | "auth" | "bus" | "paths"
>;

export type FavoritesService = ReturnType<typeof createFavoritesService>;

export function createFavoritesService(deps: FavoritesDeps) {
  // Shares the download tickets' table and bounds (60 s, single use, bound to the session).
  const tickets = createDbTickets({
    db: deps.database.db,
    clock: deps.clock,
    purpose: "download",
    ttlMs: 60_000,
    maxTotal: 2_000,
    maxPerSession: 4,
  });

  /** Upload-only mode: the owner a guest's lists are limited to, else null. */
  async function ownerLimit(user: AuthedUser): Promise<string | null> {
    return (await restrictedToOwn(deps, user)) ? user.id : null;
  }

  /** PUT/DELETE /upload/{id}/favorite: idempotent; only uploads the caller can see. */
  async function setFavorite(user: AuthedUser, uploadId: string, on: boolean): Promise<void> {
    await deps.limiter.hit(`social:${user.id}`, SOCIAL_WRITES_PER_MIN, 60_000);
    const owner = await ownerLimit(user);
    const { database, clock } = deps;
    await database.writeTx(async (trx) => {
      const row = await findVisibleUpload(trx, uploadId);
      if (!row || (owner !== null && row.user_id !== owner)) {
        // Un-starring something no longer visible still removes the star.
        if (!on) return repo.setFavoriteRow(trx, user.id, uploadId, false, clock.iso());
        throw uploadNotFound();
      }
      await repo.setFavoriteRow(trx, user.id, uploadId, on, clock.iso());
    });
  }

  async function page(
    user: AuthedUser,
    query: { limit?: string | undefined; cursor?: string | undefined },
    which: { favoritesOf: string } | { highlights: true },
  ): Promise<ListPage> {
    const settings = await deps.settings.all();
    await deps.limiter.hit(`feed:${user.id}`, settings.feed_rate_per_min, 60_000);
    const limit = clampLimit(query.limit, FEED_LIMIT_DEFAULT);
    const before = query.cursor ? decodePageKey(query.cursor) : null;
    const { reader } = deps.database;
    const keys = await repo.pageOf(reader, which, await ownerLimit(user), before, limit + 1);
    const shown = keys.slice(0, limit);
    const items = await loadFeedItems(
      reader,
      shown.map((k) => k.id),
      { id: user.id, mediaToken: await deps.auth.mediaToken(user) },
    );
    const last = shown.at(-1);
    return {
      items,
      next_cursor: keys.length > limit && last ? encodePageKey(last) : null,
      delta_cursor: deltaCursorNow(deps),
    };
  }

  /** GET /feed?favorites=1: the caller's visible favourites, newest first. */
  function favorites(user: AuthedUser, query: { limit?: string | undefined; cursor?: string | undefined }) {
    return page(user, query, { favoritesOf: user.id });
  }

  /** GET /feed?highlights=1: visible highlights, newest first. */
  function highlights(user: AuthedUser, query: { limit?: string | undefined; cursor?: string | undefined }) {
    return page(user, query, { highlights: true });
  }

  /** PUT/DELETE /host/upload/{id}/highlight: idempotent, audited when it changes something. */
  async function setHighlight(actor: AuthedUser, uploadId: string, on: boolean): Promise<void> {
    const { database, clock } = deps;
    const changed = await database.writeTx(async (trx) => {
      if (!(await findVisibleUpload(trx, uploadId))) throw uploadNotFound();
      const now = clock.iso();
      if (!(await repo.setHighlight(trx, uploadId, on, now))) return false;
      await recordAudit(trx, database, {
        actorId: actor.id,
        action: on ? "highlight_upload" : "unhighlight_upload",
        targetType: "upload",
        targetId: uploadId,
        at: now,
      });
      return true;
    });
    if (changed) deps.bus.publish("upload-updated", { id: uploadId, highlight: on });
  }

  /** POST /favorites/ticket: a single-use ticket for GET /favorites.zip (60 s, this session). */
  async function issueTicket(user: AuthedUser): Promise<{ ticket: string; expires_at: string }> {
    const r = await tickets.issue({ userId: user.id, sessionId: user.sessionId, kind: TICKET_KIND });
    if (!r.ok) throw tooManyRequests(60, "Too many open download tickets; try again shortly.");
    return { ticket: r.ticket, expires_at: toIso(r.expiresAt) };
  }

  /**
   * GET /favorites.zip?ticket=: the caller's visible favourites' originals as one zip, streamed
   * while it is written (nothing is kept on disk); 404 when there are none.
   */
  async function openZip(ticket: string | undefined): Promise<Readable> {
    const t = ticket ? await tickets.redeem(ticket) : null;
    const bad = () => unauthorized("The download ticket is invalid or expired.", "invalid_ticket");
    if (!t || t.kind !== TICKET_KIND) throw bad();
    const { db } = deps.database;
    if (!(await sessionIsLive(db, t.sessionId, deps.clock.iso()))) throw bad();
    const user = await userRole(db, t.userId);
    if (!user) throw bad();
    const owner = (await restrictedToOwn(deps, user)) ? t.userId : null;
    const rows = await repo.favoriteOriginals(db, t.userId, owner);
    // The Gallery.zip naming: <display name>/<created_at>_<id>.<ext>.
    const snaps = rows.map((r) => ({
      ...r,
      caption: "",
      media_type: "image" as const,
      display_path: null,
      thumbnail_path: null,
      original_size_bytes: 0,
    }));
    const folders = folderNames(snaps);
    const files: { name: string; path: string; mtime: Date }[] = [];
    for (const r of snaps) {
      const path = mediaFile(deps.paths.mediaDir, r.original_path);
      if (!(await stat(path).catch(() => null))?.isFile()) continue;
      files.push({
        name: galleryEntryName(folders.get(r.user_id) as string, r),
        path,
        mtime: new Date(r.created_at),
      });
    }
    if (files.length === 0) throw notFound("You have no favourites to download.", "no_favorites");
    const zip = new yazl.ZipFile();
    // Photos and videos are compressed already.
    for (const f of files) zip.addFile(f.path, f.name, { compress: false, mtime: f.mtime });
    zip.end();
    return zip.outputStream as unknown as Readable;
  }

  return { setFavorite, favorites, highlights, setHighlight, issueTicket, openZip };
}
