import { registerMetrics } from "@app/kit/http/metrics";
import type { FastifyInstance } from "fastify";
import { countByCompressionStatus } from "../admin/repository.js";
import type { GalleryContext } from "../context.js";
import type { ExportStatus } from "../db/schema.js";
import { listJobs } from "../export/repository.js";
import { GALLERY_VERSION } from "../version.js";

const EXPORT_STATUSES: readonly ExportStatus[] = ["pending", "running", "done", "failed"];

/**
 * `GET /metrics` for the gallery: the kit's HTTP, process and pool metrics plus the gallery's
 * own gauges, each read from live state when Prometheus scrapes. Register before the routes.
 */
export function registerGalleryMetrics(
  app: FastifyInstance,
  ctx: Pick<GalleryContext, "config" | "database">,
  live: { sseClients: () => number },
): void {
  const metrics = registerMetrics(app, {
    token: ctx.config.METRICS_TOKEN,
    database: ctx.database,
    build: { name: "gallery", version: GALLERY_VERSION },
  });
  metrics.gauge({
    name: "gallery_derivative_backlog",
    help: "Uploads waiting for their thumbnail, preview and display sizes.",
    collect: () => countByCompressionStatus(ctx.database.reader, "processing"),
  });
  metrics.gauge({
    name: "gallery_sse_clients",
    help: "Open live-update (SSE) streams.",
    collect: live.sseClients,
  });
  metrics.gauge({
    name: "gallery_export_job_state",
    help: "Keepsake export jobs: 1 for the state each kind is in, 0 for the others.",
    labelNames: ["kind", "status"],
    collect: async () =>
      (await listJobs(ctx.database.reader)).flatMap((job) =>
        EXPORT_STATUSES.map((status) => ({
          labels: { kind: job.kind, status },
          value: job.status === status ? 1 : 0,
        })),
      ),
  });
  metrics.gauge({
    name: "gallery_export_job_progress_percent",
    help: "Progress of each keepsake export job, 0 to 100.",
    labelNames: ["kind"],
    collect: async () =>
      (await listJobs(ctx.database.reader)).map((job) => ({
        labels: { kind: job.kind },
        value: job.progress_pct,
      })),
  });
}
