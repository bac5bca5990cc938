import { parseInput } from "@app/kit/validate";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { deleteFile, getFile, listFiles } from "../../files-admin/files-admin.js";
import { adminApp, pageQuery } from "./triggers.js";

const listQuery = pageQuery.extend({ collection: z.string().min(1).max(200).optional() });

type FileParams = { Params: { app: string; collection: string; name: string } };

/** GET /admin/apps/{id}/files?collection=&cursor=, GET/DELETE …/files/{collection}/{name}. */
export const filesAdminRoutes: RouteModule = (app, ctx) => {
  const deps = { database: ctx.database, filesRoot: ctx.paths.filesRoot };

  app.get<{ Params: { app: string } }>("/api/v1/admin/apps/:app/files", async (req) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    return listFiles(deps, a.id, parseInput(listQuery, req.query));
  });

  app.get<FileParams>("/api/v1/admin/apps/:app/files/:collection/:name", async (req) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    return getFile(deps, a.id, req.params.collection, req.params.name);
  });

  app.delete<FileParams>("/api/v1/admin/apps/:app/files/:collection/:name", async (req, reply) => {
    const { app: a } = await adminApp(ctx, req, req.params.app);
    await deleteFile(deps, a.id, req.params.collection, req.params.name);
    return reply.code(204).send();
  });
};
