import { errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import type { FavoritesService } from "../../favorites/service.js";
import { deltaCursorNow, type FeedService } from "../../feed/feed.js";
import { restrictedToOwn } from "../../feed/upload-only.js";
import type { PremoderationService } from "../../premoderation/service.js";
import { auth, principal } from "../route-auth.js";
import { Delta, FeedPage, MyUploads, Uploaders } from "../schemas.js";

// Query strings: unknown parameters are ignored (cache busters); every value is bounded.
const q = z.string().max(4_000).optional();
const FeedQuery = z.object({
  limit: q,
  cursor: q,
  hashtag: q,
  hashtags: q,
  uploader: q,
  mine: q,
  favorites: q,
  highlights: q,
});
const on = (v: string | undefined) => v === "1" || v === "true";
const DeltaQuery = z.object({ limit: q, cursor: q });

/** GET /feed, /feed/delta, /uploaders. */
export function registerFeedRoutes(
  app: FastifyInstance,
  ctx: GalleryContext,
  services: { feed: FeedService; favorites: FavoritesService; premoderation: PremoderationService },
) {
  const { feed, favorites, premoderation } = services;
  const api = typed(app);
  api.get(
    "/feed",
    {
      config: auth.user,
      schema: {
        querystring: FeedQuery,
        response: { 200: z.union([FeedPage, MyUploads]), ...errors(401, 422, 429) },
      },
    },
    async (req, reply) => {
      // ?mine=1: the caller's own uploads, pending ones included (pre-moderation, issue 14).
      if (on(req.query.mine)) return premoderation.readMine(principal(req), req.query);
      // Issue 27: the caller's favourites, and the hosts' highlights (the slideshow's option).
      if (on(req.query.favorites)) return favorites.favorites(principal(req), req.query);
      if (on(req.query.highlights)) return favorites.highlights(principal(req), req.query);
      // Upload-only mode: a guest's feed is their own uploads (with a delta cursor like /feed's).
      if (await restrictedToOwn(ctx, principal(req)))
        return {
          ...(await premoderation.readMine(principal(req), req.query)),
          delta_cursor: deltaCursorNow(ctx),
        };
      // Already JSON bytes (a FeedPage, built from a cached template): sent as they are.
      const json = await feed.readFeed(principal(req), req.query);
      return reply.type("application/json; charset=utf-8").send(json as never);
    },
  );

  api.get(
    "/feed/delta",
    {
      config: auth.user,
      schema: { querystring: DeltaQuery, response: { 200: Delta, ...errors(401, 422, 429) } },
    },
    async (req, reply) => {
      // JSON bytes built from a cached template, like /feed.
      const json = await feed.readDelta(principal(req), req.query);
      if (await restrictedToOwn(ctx, principal(req))) {
        // Upload-only mode (rare, so the cached bytes are parsed): only the guest's own uploads.
        const delta = JSON.parse(json.toString("utf8")) as z.infer<typeof Delta>;
        const own = (i: { uploader: { id: string } }) => i.uploader.id === principal(req).id;
        return { ...delta, items: delta.items.filter(own), changes: delta.changes.filter(own) };
      }
      return reply.type("application/json; charset=utf-8").send(json as never);
    },
  );

  api.get(
    "/uploaders",
    { config: auth.user, schema: { response: { 200: Uploaders, ...errors(401) } } },
    async (req) => {
      const list = await feed.listUploaders();
      if (!(await restrictedToOwn(ctx, principal(req)))) return list;
      return { uploaders: list.uploaders.filter((u) => u.id === principal(req).id) };
    },
  );
}
