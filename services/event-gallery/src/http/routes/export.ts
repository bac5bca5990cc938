import { binary, errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import type { ExportKind } from "../../db/schema.js";
import { jobView, type KeepsakeService } from "../../export/keepsake.js";
import { archiveStream } from "../../export/viewer-lang.js";
import type { ExportWorker } from "../../export/worker.js";
import { auth, principal } from "../route-auth.js";
import { ExportJob, ExportStatus, Ticket } from "../schemas.js";

const TicketBody = z.strictObject({ kind: z.enum(["zip", "html"]) });
// A missing or repeated ticket is simply no ticket (401 from openDownload), as before.
const DownloadQuery = z.object({
  ticket: z.string().optional().catch(undefined),
  lang: z
    .enum(["en", "de"])
    .optional()
    .describe("Memories.zip: the viewer opens in this language (the downloader's UI language)"),
});

/** Keepsake export routes: status, download tickets, downloads, and the host's rebuild. */
export function registerExportRoutes(
  api: FastifyInstance,
  _ctx: GalleryContext,
  keepsake: KeepsakeService,
  exports: ExportWorker,
): void {
  const r = typed(api);

  // Banned guests keep read access and the keepsake download.
  r.get(
    "/export/status",
    { config: auth.user, schema: { response: { 200: ExportStatus, ...errors(401) } } },
    async (req) => keepsake.exportStatus(principal(req)),
  );

  r.post(
    "/export/ticket",
    {
      config: auth.user,
      schema: { body: TicketBody, response: { 201: Ticket, ...errors(401, 404, 422, 429) } },
    },
    async (req, reply) =>
      reply.code(201).send(await keepsake.issueDownloadTicket(principal(req), req.body.kind)),
  );

  for (const kind of ["zip", "html"] as const satisfies readonly ExportKind[]) {
    // GET only: a HEAD would spend the single-use ticket and count as a download.
    r.get(
      `/export/${kind}/download`,
      {
        exposeHeadRoute: false,
        schema: {
          querystring: DownloadQuery,
          response: {
            200: binary("application/zip", kind === "zip" ? "Gallery.zip" : "Memories.zip"),
            ...errors(401, 404, 429),
          },
        },
      },
      async (req, reply) => {
        const dl = await keepsake.openDownload(req.query.ticket, kind);
        return reply
          .type("application/zip")
          .header("content-disposition", `attachment; filename="${dl.fileName}"`)
          .header("content-length", String(dl.size))
          .header("cache-control", "no-store")
          .send(await archiveStream(dl.handle, dl.size, kind === "html" ? req.query.lang : undefined));
      },
    );
  }

  r.post(
    "/host/export/rebuild",
    {
      config: auth.hostWrite,
      schema: { response: { 202: z.object({ jobs: z.array(ExportJob) }), ...errors(401, 403, 409) } },
    },
    async (_req, reply) => {
      const jobs = await keepsake.rebuildFailed();
      exports.kick();
      return reply.code(202).send({ jobs: jobs.map(jobView) });
    },
  );
}
