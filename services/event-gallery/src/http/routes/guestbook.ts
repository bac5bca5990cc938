import { stat } from "node:fs/promises";
import { notFound } from "@app/kit/errors";
import { sendFileWithRange } from "@app/kit/http";
import { binary, errors, NoBody, typed } from "@app/kit/http/typed-routes";
import multipart from "@fastify/multipart";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import type { GuestbookService } from "../../guestbook/service.js";
import { endWhenIdle } from "../../uploads/idle.js";
import { auth, galleryAuth, principal } from "../route-auth.js";
import { GuestbookEntry, GuestbookPage } from "../schemas.js";
import { IdParams } from "./social.js";

const q = z.string().max(4_000).optional();
const PageQuery = z.object({ limit: q, cursor: q });
const EntryBody = z.object({ entry: GuestbookEntry });

/** The guestbook (issue 27): list, write (text or voice), delete own, host takedown and approval. */
export function registerGuestbookRoutes(
  app: FastifyInstance,
  ctx: GalleryContext,
  guestbook: GuestbookService,
) {
  const api = typed(app);
  const params = IdParams("guestbook entry");
  api.get(
    "/guestbook",
    {
      config: auth.user,
      schema: { querystring: PageQuery, response: { 200: GuestbookPage, ...errors(401, 422) } },
    },
    async (req) => guestbook.list(principal(req), req.query),
  );
  // JSON or multipart: multipart parsing only in this scope.
  app.register(async (scope) => {
    await scope.register(multipart, { throwFileSizeLimit: false, limits: { files: 1, fields: 4 } });
    typed(scope).post(
      "/guestbook",
      {
        config: auth.writer,
        schema: {
          description:
            "JSON `{text}` (1-2,000 characters after trimming), or multipart/form-data `text?` then `file` (an audio recording of at most 60 s; only when the config key guestbook_voice is true).",
          response: { 201: EntryBody, ...errors(400, 401, 403, 413, 415, 422, 429) },
        },
      },
      async (req, reply) => {
        let entry: GuestbookEntry;
        if (req.isMultipart()) {
          const keepIdle = endWhenIdle(req.raw, ctx.config.GALLERY_UPLOAD_IDLE_S * 1000);
          try {
            entry = await guestbook.create(principal(req), {
              kind: "multipart",
              parts: (limits) => req.parts({ limits }),
            });
          } finally {
            keepIdle();
          }
        } else entry = await guestbook.create(principal(req), { kind: "json", body: req.body });
        return reply.code(201).send({ entry });
      },
    );
  });
  api.delete(
    "/guestbook/:id",
    {
      config: auth.writer,
      schema: { params, response: { 204: NoBody, ...errors(401, 403, 404, 429) } },
    },
    async (req, reply) => {
      await guestbook.deleteOwn(principal(req), req.params.id);
      return reply.code(204).send();
    },
  );
  api.get(
    "/guestbook/:id/voice",
    {
      config: { auth: galleryAuth.spec({ allowMediaToken: true }) },
      schema: {
        params,
        querystring: z.object({ t: z.string().optional() }),
        response: {
          200: binary("application/octet-stream", "The voice message (audio)"),
          206: binary("application/octet-stream", "The requested range"),
          ...errors(401, 404, 416),
        },
      },
    },
    async (req, reply) => {
      const file = await guestbook.voiceFile(principal(req), req.params.id);
      const info = await stat(file.path).catch(() => null);
      if (!info?.isFile()) throw notFound("This voice message does not exist.");
      return sendFileWithRange(reply, {
        path: file.path,
        size: info.size,
        contentType: file.mime,
        rangeHeader: req.headers.range,
        headers: { "content-disposition": "inline", "cache-control": "no-store" },
      });
    },
  );
  api.delete(
    "/host/guestbook/:id",
    {
      config: auth.hostWrite,
      schema: { params, response: { 204: NoBody, ...errors(401, 403, 404) } },
    },
    async (req, reply) => {
      await guestbook.takedown(principal(req), req.params.id);
      return reply.code(204).send();
    },
  );
  api.post(
    "/host/guestbook/:id/approve",
    {
      config: auth.hostWrite,
      schema: { params, response: { 200: EntryBody, ...errors(401, 403, 404) } },
    },
    async (req) => ({ entry: await guestbook.approve(principal(req), req.params.id) }),
  );
}
