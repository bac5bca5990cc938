import { AppError } from "@app/kit/errors";
import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import multipart from "@fastify/multipart";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import { endWhenIdle } from "../../uploads/idle.js";
import type { Ingest } from "../../uploads/ingest.js";
import type { UploadManager } from "../../uploads/manage.js";
import { auth, principal } from "../route-auth.js";
import { UploadBody } from "../schemas.js";

const IdParams = z.object({ id: z.string().max(64) });
const EditBody = z.strictObject({
  caption: z.string().max(20_000).optional(),
  hashtags: z.union([z.string().max(20_000), z.array(z.string().max(1_000)).max(200)]).optional(),
});

/** POST /upload (multipart, streamed), PATCH and DELETE /upload/{id}. */
export function registerUploadRoutes(
  app: FastifyInstance,
  ctx: GalleryContext,
  uploads: { ingest: Ingest; manager: UploadManager },
) {
  const api = typed(app);
  // Multipart parsing only in this scope; limits are set per request from the live settings.
  app.register(async (scope) => {
    await scope.register(multipart, { throwFileSizeLimit: false, limits: { files: 1, fields: 64 } });
    typed(scope).post(
      "/upload",
      {
        config: auth.writer,
        schema: {
          description:
            "multipart/form-data: `client_upload_id?`, `caption?`, `hashtags?` (comma or space separated, or repeated), then `file`. 201 new, 200 replay of the same key.",
          response: { 201: UploadBody, 200: UploadBody, ...errors(401, 403, 409, 413, 415, 422, 429) },
        },
      },
      async (req, reply) => {
        if (!req.isMultipart())
          throw new AppError(415, "unsupported_media_type", "Send the upload as multipart/form-data.");
        const declared = Number(req.headers["content-length"]);
        // A client that sends nothing for GALLERY_UPLOAD_IDLE_S is cut off; the temp file goes with it.
        const keepIdle = endWhenIdle(req.raw, ctx.config.GALLERY_UPLOAD_IDLE_S * 1000);
        try {
          const result = await uploads.ingest.ingestUpload(
            principal(req),
            (limits) => req.parts({ limits }),
            Number.isSafeInteger(declared) ? declared : null,
          );
          return reply.code(result.status).send({ upload: result.upload });
        } finally {
          keepIdle();
        }
      },
    );
  });

  api.patch(
    "/upload/:id",
    {
      config: auth.writer,
      schema: {
        params: IdParams,
        body: EditBody,
        response: { 200: UploadBody, ...errors(401, 403, 404, 422, 429) },
      },
    },
    async (req) => ({ upload: await uploads.manager.editUpload(principal(req), req.params.id, req.body) }),
  );

  api.delete(
    "/upload/:id",
    {
      config: auth.writer,
      schema: { params: IdParams, response: { 204: NoBody, ...errors(401, 403, 404) } },
    },
    async (req, reply) => {
      await uploads.manager.deleteOwnUpload(principal(req), req.params.id);
      return reply.code(204).send();
    },
  );
}
