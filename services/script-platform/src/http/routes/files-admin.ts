import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModuleWith } from "../../context.js";
import { deleteFile, getFile, listFiles } from "../../files-admin/files-admin.js";
import type { EventSink } from "../../sdk/types.js";
import { AppParams, appAdmin, targetApp } from "../route-auth.js";
import { page, StoredFile } from "../schemas.js";
import { pageQuery } from "./triggers.js";

const listQuery = pageQuery.extend({ collection: z.string().min(1).max(200).optional() });

const FileParams = AppParams.extend({ collection: z.string(), name: z.string() });

/** GET /admin/apps/{id}/files?collection=&cursor=, GET/DELETE …/files/{collection}/{name}. */
export const filesAdminRoutes: RouteModuleWith<{ events: EventSink }> = (app, ctx, engine) => {
  const deps = { database: ctx.database, filesRoot: ctx.paths.filesRoot, events: engine.events };

  const api = typed(app);

  api.get(
    "/api/v1/admin/apps/:app/files",
    {
      config: appAdmin,
      schema: {
        params: AppParams,
        querystring: listQuery,
        response: { 200: page(StoredFile), ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => listFiles(deps, targetApp(req).id, req.query),
  );

  api.get(
    "/api/v1/admin/apps/:app/files/:collection/:name",
    {
      config: appAdmin,
      schema: { params: FileParams, response: { 200: StoredFile, ...errors(401, 403, 404) } },
    },
    async (req) => getFile(deps, targetApp(req).id, req.params.collection, req.params.name),
  );

  api.delete(
    "/api/v1/admin/apps/:app/files/:collection/:name",
    { config: appAdmin, schema: { params: FileParams, response: { 204: NoBody, ...errors(401, 403, 404) } } },
    async (req, reply) => {
      await deleteFile(deps, targetApp(req).id, req.params.collection, req.params.name);
      return reply.code(204).send();
    },
  );
};
