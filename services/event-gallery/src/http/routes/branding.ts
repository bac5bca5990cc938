import { AppError } from "@app/kit/errors";
import { sendFileWithRange } from "@app/kit/http";
import multipart from "@fastify/multipart";
import type { FastifyInstance } from "fastify";
import { COVER_MAX_BYTES, coverFile, publicEvent, removeCover, setCover } from "../../branding/service.js";
import type { GalleryContext } from "../../context.js";

/** Event branding (contract "Hosts and guests"): the open event card and the cover photo. */
export function registerBrandingRoutes(app: FastifyInstance, ctx: GalleryContext) {
  app.get("/event/public", async () => publicEvent(ctx));

  app.get("/event/cover", async (req, reply) => {
    const file = await coverFile(ctx);
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
    scope.put("/admin/cover", async (req) => {
      await ctx.auth.requireUser(req, { minRole: "admin", write: true });
      if (!req.isMultipart())
        throw new AppError(415, "unsupported_media_type", "Send the cover as multipart/form-data with a file part.");
      const part = await req.file();
      if (!part || part.fieldname !== "file")
        throw new AppError(422, "validation_failed", "The form needs a file part named file.", { field: "file" });
      return { event: await setCover(ctx, part.file) };
    });
  });

  app.delete("/admin/cover", async (req, reply) => {
    await ctx.auth.requireUser(req, { minRole: "admin", write: true });
    await removeCover(ctx);
    return reply.code(204).send();
  });
}
