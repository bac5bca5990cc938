import { parseInput } from "@app/kit/validate";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import type { ExportKind } from "../../db/schema.js";
import {
  exportStatus,
  issueDownloadTicket,
  jobView,
  openDownload,
  rebuildFailed,
} from "../../export/keepsake.js";
import { TicketStore } from "../../export/tickets.js";
import type { ExportWorker } from "../../export/worker.js";

const TicketBody = z.strictObject({ kind: z.enum(["zip", "html"]) });

/** Keepsake export routes: status, download tickets, downloads, and the host's rebuild. */
export function registerExportRoutes(api: FastifyInstance, ctx: GalleryContext, exports: ExportWorker): void {
  const tickets = new TicketStore(ctx.clock);

  api.get("/export/status", async (req) => {
    // Banned guests keep read access and the keepsake download.
    const user = await ctx.auth.requireUser(req);
    return exportStatus(ctx, user);
  });

  api.post("/export/ticket", async (req, reply) => {
    const user = await ctx.auth.requireUser(req);
    const { kind } = parseInput(TicketBody, req.body ?? {});
    return reply.code(201).send(await issueDownloadTicket(ctx, tickets, user, kind));
  });

  for (const kind of ["zip", "html"] as const satisfies readonly ExportKind[]) {
    // GET only: a HEAD would spend the single-use ticket and count as a download.
    api.get(`/export/${kind}/download`, { exposeHeadRoute: false }, async (req, reply) => {
      const ticket = (req.query as Record<string, unknown>).ticket;
      const dl = await openDownload(ctx, tickets, typeof ticket === "string" ? ticket : undefined, kind);
      return reply
        .type("application/zip")
        .header("content-disposition", `attachment; filename="${dl.fileName}"`)
        .header("content-length", String(dl.size))
        .header("cache-control", "no-store")
        .send(dl.handle.createReadStream());
    });
  }

  api.post("/host/export/rebuild", async (req, reply) => {
    await ctx.auth.requireUser(req, { minRole: "host", write: true });
    const jobs = await rebuildFailed(ctx);
    exports.kick();
    return reply.code(202).send({ jobs: jobs.map(jobView) });
  });
}
