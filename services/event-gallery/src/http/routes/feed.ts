import { parseInput } from "@app/kit/validate";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import { listUploaders, readDelta, readFeed } from "../../feed/feed.js";

// Query strings: unknown parameters are ignored (cache busters); every value is bounded.
const q = z.string().max(4_000).optional();
const FeedQuery = z.object({ limit: q, cursor: q, hashtag: q, hashtags: q, uploader: q });
const DeltaQuery = z.object({ limit: q, cursor: q });

/** GET /feed, /feed/delta, /uploaders. */
export function registerFeedRoutes(app: FastifyInstance, ctx: GalleryContext) {
  app.get("/feed", async (req) => {
    const user = await ctx.auth.requireUser(req);
    return readFeed(ctx, user, parseInput(FeedQuery, req.query ?? {}));
  });

  app.get("/feed/delta", async (req) => {
    const user = await ctx.auth.requireUser(req);
    return readDelta(ctx, user, parseInput(DeltaQuery, req.query ?? {}));
  });

  app.get("/uploaders", async (req) => {
    await ctx.auth.requireUser(req);
    return listUploaders(ctx);
  });
}
