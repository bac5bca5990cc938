import { errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { failedUploads, jobsOverview } from "../../admin/jobs.js";
import type { GalleryContext } from "../../context.js";
import { mediaUsage } from "../../disk/usage.js";
import type { EditableSettingsStore } from "../../settings/store.js";
import { auth } from "../route-auth.js";
import { ConfigValues, DiskUsage, FailedUploads, JobsOverview } from "../schemas.js";

// Keys and values are checked by the settings store (422 unknown_key / invalid_value).
const ConfigPatch = z.record(z.string(), z.unknown(), {
  error: "The body must be an object of config keys.",
});

/** Admin-only: runtime config, disk usage, background jobs. */
export function registerAdminRoutes(
  app: FastifyInstance,
  ctx: GalleryContext,
  settings: EditableSettingsStore,
) {
  const api = typed(app);
  const config = z.object({ config: ConfigValues });
  api.get(
    "/admin/config",
    { config: auth.admin, schema: { response: { 200: config, ...errors(401, 403) } } },
    async () => ({ config: await settings.all() }),
  );
  api.patch(
    "/admin/config",
    {
      config: auth.adminWrite,
      schema: { body: ConfigPatch, response: { 200: config, ...errors(401, 403, 422) } },
    },
    async (req) => ({ config: await settings.update(req.body) }),
  );
  api.get(
    "/admin/disk",
    { config: auth.admin, schema: { response: { 200: DiskUsage, ...errors(401, 403) } } },
    async () => {
      const [disk, usage] = await Promise.all([ctx.disk.stat(), mediaUsage(ctx.paths.mediaDir)]);
      return { ...disk, ...usage };
    },
  );
  api.get(
    "/admin/jobs",
    { config: auth.admin, schema: { response: { 200: JobsOverview, ...errors(401, 403) } } },
    async () => jobsOverview(ctx.database.db),
  );
  // Read-only (issue 14): the contract has no retry for a failed upload.
  api.get(
    "/admin/failed-uploads",
    { config: auth.admin, schema: { response: { 200: FailedUploads, ...errors(401, 403) } } },
    async () => failedUploads(ctx.database.db),
  );
}
