import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";
import { AppError } from "@app/kit/errors";
import { binary, errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { PortalClient } from "../upstream/portal.js";
import { portalErrorToHttp } from "./errors.js";
import type { Guard } from "./guard.js";
import { bridgeAuth } from "./route-auth.js";

/** Headers of the portal's file answer that the mirror passes on (no cookies, no server ids). */
const PASS_HEADERS = [
  "content-type",
  "content-length",
  "content-range",
  "accept-ranges",
  "content-disposition",
  "etag",
  "last-modified",
];

/**
 * The file-mirror stream: GET /api/files/{fileRecordId}/{fileName} pipes the portal's download
 * through the bridge. Nothing is stored; a client that goes away cancels the upstream read.
 */
export function registerFilesRoute(app: FastifyInstance, deps: { guard: Guard; portal: PortalClient }): void {
  typed(app).get(
    "/api/files/:fileRecordId/:fileName",
    {
      config: { auth: bridgeAuth.spec("api") },
      schema: {
        // Checked below so that a bad id or name gets the plain 404 of a missing file.
        params: z.object({ fileRecordId: z.string(), fileName: z.string() }),
        response: {
          200: binary("application/octet-stream", "The file, streamed from the portal"),
          206: binary("application/octet-stream", "The requested range"),
          ...errors(401, 403, 404, 416, 502, 503),
        },
      },
    },
    async (req, reply) => {
      const { fileRecordId, fileName } = req.params;
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(fileRecordId)) throw new AppError(404, "not_found", "Not found.");
      if (
        fileName === "" ||
        fileName.length > 255 ||
        /[/\\\u0000-\u001f]/.test(fileName) ||
        fileName === ".." ||
        fileName === "."
      )
        throw new AppError(404, "not_found", "Not found.");
      const range = req.headers.range;
      let upstream: Awaited<ReturnType<PortalClient["getStream"]>>;
      try {
        upstream = await deps.portal.getStream(
          `/api/v3/file/download/${fileRecordId}/${encodeURIComponent(fileName)}`,
          typeof range === "string" ? { range } : {},
        );
      } catch (err) {
        throw portalErrorToHttp(err);
      }
      // getStream throws on an error status: what is left is 200 or 206.
      reply.code(upstream.status as 200 | 206);
      for (const h of PASS_HEADERS) {
        const v = upstream.headers.get(h);
        if (v !== null) reply.header(h, v);
      }
      reply.header("cache-control", "private, no-store");
      if (!upstream.body) return reply.send();
      const stream = Readable.fromWeb(upstream.body as unknown as NodeReadableStream<Uint8Array>);
      reply.raw.once("close", () => {
        if (!stream.destroyed) stream.destroy();
      });
      return reply.send(stream);
    },
  );
}
