import { parseInput } from "@app/kit/validate";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import { listUploaders, readDelta, readFeed } from "../../feed/feed.js";
import { readMine } from "../../premoderation/service.js";

// Query strings: unknown parameters are ignored (cache busters); every value is bounded.
const q = z.string().max(4_000).optional();
const FeedQuery = z.object({ limit: q, cursor: q, hashtag: q, hashtags: q, uploader: q, mine: q });
const DeltaQuery = z.object({ limit: q, cursor: q });

/** GET /feed, /feed/delta, /uploaders. */
export function registerFeedRoutes(app: FastifyInstance, ctx: GalleryContext) {
  app.get("/feed", async (req) => {
    const user = await ctx.auth.requireUser(req);
    const query = parseInput(FeedQuery, req.query ?? {});
    // ?mine=1: the caller's own uploads, pending ones included (pre-moderation, issue 14).
    if (query.mine === "1" || query.mine === "true") return readMine(ctx, user, query);
    return readFeed(ctx, user, query);
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
