import { AppError } from "@app/kit/errors";
import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import { endWhenIdle } from "../../uploads/idle.js";
import {
  ClientGone,
  invalidBody,
  parseUploadMetadata,
  type ResumableState,
  type ResumableUploads,
} from "../../uploads/resumable.js";
import { auth, principal } from "../route-auth.js";
import { UploadBody } from "../schemas.js";

const TUS_VERSION = "1.0.0";
const TUS_EXTENSIONS = "creation,expiration,termination";
const BASE = "/api/v1/uploads";
const OFFSET_OCTETS = "application/offset+octet-stream";
// tus speaks in headers (Tus-Resumable, Upload-Length, Upload-Offset, Upload-Metadata, Location).
const KeyParams = z.object({ key: z.string() });
const tusRefusals = errors(401, 403, 404, 409, 410, 412, 413, 415, 422, 429);

/**
 * tus 1.0.0 (core, creation, expiration, termination) at /uploads. The route only translates
 * headers; the rules live in uploads/resumable.ts.
 */
export function registerResumableRoutes(
  app: FastifyInstance,
  ctx: GalleryContext,
  resumable: ResumableUploads,
) {
  const idleMs = ctx.config.GALLERY_UPLOAD_IDLE_S * 1000;

  app.register(async (untyped) => {
    const scope = typed(untyped);
    // PATCH bodies are streamed by the handler, never buffered; any other type is refused there.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", (_req, _payload, done) => done(null));

    scope.addHook("onRequest", async (req, reply) => {
      reply.header("tus-resumable", TUS_VERSION);
      if (req.method !== "OPTIONS" && req.headers["tus-resumable"] !== TUS_VERSION) {
        reply.header("tus-version", TUS_VERSION);
        throw new AppError(412, "tus_version", `Send Tus-Resumable: ${TUS_VERSION}.`);
      }
    });

    scope.options("/uploads", { schema: { response: { 204: NoBody } } }, async (_req, reply) => {
      const settings = await ctx.settings.all();
      return reply
        .code(204)
        .header("tus-version", TUS_VERSION)
        .header("tus-extension", TUS_EXTENSIONS)
        .header("tus-max-size", String(settings.max_upload_bytes))
        .send();
    });

    const creation = {
      description:
        "tus creation: Upload-Length and Upload-Metadata (client_upload_id, caption, hashtags, filename).",
      response: { 201: NoBody, 200: UploadBody, ...tusRefusals },
    };
    scope.post("/uploads", { config: auth.writer, schema: creation }, async (req, reply) => {
      const user = principal(req);
      if (req.headers["upload-defer-length"] !== undefined)
        throw invalidBody("Upload-Defer-Length is not supported; send Upload-Length.");
      const length = headerInt(req, "upload-length");
      if (length === null) throw invalidBody("Upload-Length must be a non-negative integer.");
      const metadata = parseUploadMetadata(headerText(req, "upload-metadata"));
      const result = await resumable.createResumable(user, { length, metadata });
      req.raw.resume();
      if (result.state.key) tusHeaders(reply, result.state).header("location", `${BASE}/${result.state.key}`);
      if (result.status === 200) return reply.code(200).send({ upload: result.upload });
      return reply.code(201).send();
    });

    const status = { params: KeyParams, response: { 200: NoBody, ...errors(401, 404, 410, 412) } };
    scope.head("/uploads/:key", { config: auth.user, schema: status }, async (req, reply) => {
      const state = await resumable.resumableStatus(principal(req), req.params.key);
      return tusHeaders(reply, state).header("cache-control", "no-store").code(200).send();
    });

    const append = {
      description: `tus append: the bytes as ${OFFSET_OCTETS} at Upload-Offset; the last PATCH answers {upload}.`,
      params: KeyParams,
      response: { 204: NoBody, 201: UploadBody, 200: UploadBody, ...tusRefusals },
    };
    scope.patch("/uploads/:key", { config: auth.writer, schema: append }, async (req, reply) => {
      const user = principal(req);
      const type = (req.headers["content-type"] ?? "").split(";")[0]?.trim().toLowerCase();
      if (type !== OFFSET_OCTETS)
        throw new AppError(415, "unsupported_media_type", `Send the bytes as ${OFFSET_OCTETS}.`);
      const offset = headerInt(req, "upload-offset");
      if (offset === null) throw invalidBody("Upload-Offset must be a non-negative integer.");
      // A client that stops sending is cut off; the bytes it sent before stay resumable.
      const keepIdle = endWhenIdle(req.raw, idleMs);
      try {
        const result = await resumable.appendResumable(user, {
          key: req.params.key,
          offset,
          declaredBytes: headerInt(req, "content-length"),
          body: req.raw,
        });
        tusHeaders(reply, result.state);
        if (result.status === 204) return reply.code(204).send();
        return reply.code(result.status).send({ upload: result.upload });
      } catch (err) {
        if (err instanceof ClientGone) {
          req.log.info({ upload_key: req.params.key }, "upload request ended early");
          return reply.hijack();
        }
        throw err;
      } finally {
        keepIdle();
      }
    });

    const termination = { params: KeyParams, response: { 204: NoBody, ...errors(401, 403, 404, 410, 412) } };
    scope.delete("/uploads/:key", { config: auth.writer, schema: termination }, async (req, reply) => {
      await resumable.terminateResumable(principal(req), req.params.key);
      return reply.code(204).send();
    });
  });
}

function tusHeaders(reply: FastifyReply, state: ResumableState): FastifyReply {
  reply.header("upload-offset", String(state.offset)).header("upload-length", String(state.length));
  if (state.uploadId === null) reply.header("upload-expires", new Date(state.expiresAt).toUTCString());
  return reply;
}

function headerText(req: FastifyRequest, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v.join(",") : v;
}

/** A header that must be a non-negative decimal integer; null when absent or anything else. */
function headerInt(req: FastifyRequest, name: string): number | null {
  const v = headerText(req, name);
  if (v === undefined || !/^\d{1,16}$/.test(v.trim())) return null;
  const n = Number(v.trim());
  return Number.isSafeInteger(n) ? n : null;
}
