import { AppError } from "@app/kit/errors";
import { parseInput } from "@app/kit/validate";
import multipart from "@fastify/multipart";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import { ingestUpload } from "../../uploads/ingest.js";
import { deleteOwnUpload, editUpload } from "../../uploads/manage.js";

const IdParams = z.object({ id: z.string().max(64) });
const EditBody = z.strictObject({
  caption: z.string().max(20_000).optional(),
  hashtags: z.union([z.string().max(20_000), z.array(z.string().max(1_000)).max(200)]).optional(),
});

/** POST /upload (multipart, streamed), PATCH and DELETE /upload/{id}. */
export function registerUploadRoutes(app: FastifyInstance, ctx: GalleryContext) {
  // Multipart parsing only in this scope; limits are set per request from the live settings.
  app.register(async (scope) => {
    await scope.register(multipart, { throwFileSizeLimit: false, limits: { files: 1, fields: 64 } });
    scope.post("/upload", async (req, reply) => {
      const user = await ctx.auth.requireUser(req, { write: true });
      if (!req.isMultipart())
        throw new AppError(415, "unsupported_media_type", "Send the upload as multipart/form-data.");
      const declared = Number(req.headers["content-length"]);
      const result = await ingestUpload(
        ctx,
        user,
        (limits) => req.parts({ limits }),
        Number.isSafeInteger(declared) ? declared : null,
      );
      return reply.code(result.status).send({ upload: result.upload });
    });
  });

  app.patch("/upload/:id", async (req) => {
    const user = await ctx.auth.requireUser(req, { write: true });
    const { id } = parseInput(IdParams, req.params);
    const body = parseInput(EditBody, req.body ?? {});
    return { upload: await editUpload(ctx, user, id, body) };
  });

  app.delete("/upload/:id", async (req, reply) => {
    const user = await ctx.auth.requireUser(req, { write: true });
    const { id } = parseInput(IdParams, req.params);
    await deleteOwnUpload(ctx, user, id);
    return reply.code(204).send();
  });
}
