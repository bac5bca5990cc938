import { notFound } from "@app/kit/errors";
import { sendFileWithRange } from "@app/kit/http";
import { parseInput } from "@app/kit/validate";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import { MEDIA_VARIANTS } from "../../feed/serialize.js";
import { isMediaPath } from "../../media/guard.js";
import { resolveMedia } from "../../media/serve.js";

const IdParams = z.object({ id: z.string().max(64) });

/** GET /upload/{id}/original|preview|display|thumbnail: gated (bearer or `?t=` media token), Range. */
export function registerMediaRoutes(app: FastifyInstance, ctx: GalleryContext) {
  for (const variant of MEDIA_VARIANTS) {
    app.get(`/upload/:id/${variant}`, async (req, reply) => {
      const user = await ctx.auth.requireUser(req, { allowMediaToken: true });
      const { id } = parseInput(IdParams, req.params);
      const file = await resolveMedia(ctx, id, variant, user);
      return sendFileWithRange(reply, {
        path: file.path,
        size: file.size,
        contentType: file.contentType,
        rangeHeader: req.headers.range,
        headers: file.headers,
      });
    });
  }
}

/**
 * Register on the root instance: no path under /media/ (or /api/v1/media/) is ever answered,
 * in any percent-encoding, whatever else (a static web app, a fallback) would have served it.
 */
export function registerMediaPathGuard(app: FastifyInstance) {
  app.addHook("onRequest", async (req) => {
    if (isMediaPath(req.raw.url ?? "")) throw notFound();
  });
}
