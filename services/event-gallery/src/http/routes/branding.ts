import { AppError } from "@app/kit/errors";
import { sendFileWithRange } from "@app/kit/http";
import { binary, errors, NoBody, typed } from "@app/kit/http/typed-routes";
import multipart from "@fastify/multipart";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { type BrandingService, COVER_MAX_BYTES } from "../../branding/service.js";
import type { GalleryContext } from "../../context.js";
import { auth } from "../route-auth.js";
import { PublicEvent } from "../schemas.js";

/** Event branding (contract "Hosts and guests"): the open event card and the cover photo. */
export function registerBrandingRoutes(
  app: FastifyInstance,
  _ctx: GalleryContext,
  branding: BrandingService,
) {
  const api = typed(app);
  api.get("/event/public", { schema: { response: { 200: PublicEvent } } }, async () =>
    branding.publicEvent(),
  );

  const cover = {
    schema: {
      response: {
        200: binary("image/*", "The cover photo"),
        206: binary("image/*", "The requested range"),
        ...errors(404, 416),
      },
    },
  };
  api.get("/event/cover", cover, async (req, reply) => {
    const file = await branding.coverFile();
    return sendFileWithRange(reply, {
      path: file.path,
      contentType: file.contentType,
      rangeHeader: req.headers.range,
      // Cover URLs carry a version, so a changed cover is a new URL.
      headers: { "cache-control": "public, max-age=86400" },
    }).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") throw new AppError(404, "not_found", "There is no cover photo.");
      throw err;
    });
  });

  app.register(async (scope) => {
    await scope.register(multipart, { limits: { files: 1, fields: 0, fileSize: COVER_MAX_BYTES + 1 } });
    typed(scope).put(
      "/admin/cover",
      {
        config: auth.adminWrite,
        schema: {
          description: "multipart/form-data with one `file` part: the cover image.",
          response: { 200: z.object({ event: PublicEvent }), ...errors(401, 403, 413, 415, 422) },
        },
      },
      async (req) => {
        if (!req.isMultipart())
          throw new AppError(
            415,
            "unsupported_media_type",
            "Send the cover as multipart/form-data with a file part.",
          );
        const part = await req.file();
        if (part?.fieldname !== "file")
          throw new AppError(422, "validation_failed", "The form needs a file part named file.", {
            field: "file",
          });
        return { event: await branding.setCover(part.file) };
      },
    );
  });

  api.delete(
    "/admin/cover",
    { config: auth.adminWrite, schema: { response: { 204: NoBody, ...errors(401, 403) } } },
    async (_req, reply) => {
      await branding.removeCover();
      return reply.code(204).send();
    },
  );
}
