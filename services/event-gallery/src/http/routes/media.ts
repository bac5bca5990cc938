import { notFound } from "@app/kit/errors";
import { sendFileWithRange } from "@app/kit/http";
import { binary, errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import { MEDIA_VARIANTS } from "../../feed/serialize.js";
import { restrictedToOwn } from "../../feed/upload-only.js";
import { isMediaPath } from "../../media/guard.js";
import type { MediaFiles } from "../../media/serve.js";
import { galleryAuth, principal } from "../route-auth.js";

const IdParams = z.object({ id: z.string().max(64) });
// `?t=`: the media token from feed item URLs, for <img> and <video> tags (read by the auth hook).
const MediaQuery = z.object({ t: z.string().optional() });

/** GET /upload/{id}/original|preview|display|thumbnail: gated (bearer or `?t=` media token), Range. */
export function registerMediaRoutes(app: FastifyInstance, ctx: GalleryContext, media: MediaFiles) {
  for (const variant of MEDIA_VARIANTS) {
    typed(app).get(
      `/upload/:id/${variant}`,
      {
        config: { auth: galleryAuth.spec({ allowMediaToken: true }) },
        schema: {
          params: IdParams,
          querystring: MediaQuery,
          response: {
            200: binary("application/octet-stream", `The ${variant} (image or video)`),
            206: binary("application/octet-stream", "The requested range"),
            ...errors(401, 404, 416),
          },
        },
      },
      async (req, reply) => {
        const file = await media.resolveMedia(req.params.id, variant, principal(req), {
          ownOnly: await restrictedToOwn(ctx, principal(req)),
        });
        return sendFileWithRange(reply, {
          path: file.path,
          size: file.size,
          contentType: file.contentType,
          rangeHeader: req.headers.range,
          headers: file.headers,
        });
      },
    );
  }
}

/**
 * Register on the root instance: no path under /media/ (or /api/v1/media/) is ever answered,
 * in any percent-encoding, whatever else (a static web app, a fallback) would have served it.
 */
export function registerMediaPathGuard(app: FastifyInstance) {
  // Callback style: every request runs it, and a promise per request is measurable on /feed.
  app.addHook("onRequest", (req, _reply, done) => {
    done(isMediaPath(req.raw.url ?? "") ? notFound() : undefined);
  });
}
