import { AppError } from "@app/kit/errors";
import type { FastifyInstance } from "fastify";
import { jobsOverview } from "../../admin/jobs.js";
import type { GalleryContext } from "../../context.js";
import { mediaUsage } from "../../disk/usage.js";
import type { EditableSettingsStore } from "../../settings/store.js";

/** Admin-only: runtime config, disk usage, background jobs. */
export function registerAdminRoutes(
  app: FastifyInstance,
  ctx: GalleryContext,
  settings: EditableSettingsStore,
) {
  const admin = { minRole: "admin" } as const;

  app.get("/admin/config", async (req) => {
    await ctx.auth.requireUser(req, admin);
    return { config: await settings.all() };
  });
  app.patch("/admin/config", async (req) => {
    await ctx.auth.requireUser(req, { ...admin, write: true });
    const body = req.body;
    if (typeof body !== "object" || body === null || Array.isArray(body))
      throw new AppError(422, "validation_failed", "The body must be an object of config keys.", {
        field: null,
      });
    return { config: await settings.update(body as Record<string, unknown>) };
  });
  app.get("/admin/disk", async (req) => {
    await ctx.auth.requireUser(req, admin);
    const [disk, usage] = await Promise.all([ctx.disk.stat(), mediaUsage(ctx.paths.mediaDir)]);
    return { ...disk, ...usage };
  });
  app.get("/admin/jobs", async (req) => {
    await ctx.auth.requireUser(req, admin);
    return jobsOverview(ctx.database.db);
  });
}
