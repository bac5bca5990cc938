import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModuleWith } from "../../context.js";
import { createDataBrowser } from "../../data-browser/data-browser.js";
import type { SdkDeps } from "../../sdk/types.js";
import { platformAuth, targetApp } from "../route-auth.js";

const listQuery = z.object({
  collection: z.string().min(1).max(200).optional(),
  prefix: z.string().min(1).max(1024).optional(),
  cursor: z.string().max(4096).optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
});
const KvItem = z.object({
  collection: z.string(),
  key: z.string(),
  value: z.unknown(),
  updated_at: z.string(),
});
const DocItem = z.object({
  collection: z.string(),
  id: z.string(),
  data: z.unknown(),
  created_at: z.string(),
  updated_at: z.string(),
});
const pageOf = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), next_cursor: z.string().nullable() });

/** The admin data browser: an app's kv entries and docs (list with cursor, view, delete). */
export const dataBrowserRoutes: RouteModuleWith<{ sdk: SdkDeps }> = (app, ctx, engine) => {
  const browser = createDataBrowser({ database: ctx.database, sdk: engine.sdk });
  const api = typed(app);
  const base = "/api/v1/admin/apps/:id";
  const read = { auth: platformAuth.spec({ scope: "script:read", appParam: "id" }) };
  const write = { auth: platformAuth.spec({ scope: "script:write", appParam: "id" }) };

  api.get(
    `${base}/kv`,
    {
      config: read,
      schema: {
        params: z.object({ id: z.string() }),
        querystring: listQuery,
        response: { 200: pageOf(KvItem), ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => browser.kv(targetApp(req).id, req.query),
  );
  api.delete(
    `${base}/kv/:collection/:key`,
    {
      config: write,
      schema: {
        params: z.object({ id: z.string(), collection: z.string(), key: z.string() }),
        response: { 204: NoBody, ...errors(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await browser.kvDelete(targetApp(req).id, req.params.collection, req.params.key);
      return reply.code(204).send();
    },
  );
  api.get(
    `${base}/docs`,
    {
      config: read,
      schema: {
        params: z.object({ id: z.string() }),
        querystring: listQuery.omit({ prefix: true }),
        response: { 200: pageOf(DocItem), ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => browser.docs(targetApp(req).id, req.query),
  );
  api.get(
    `${base}/docs/:collection/:doc`,
    {
      config: read,
      schema: {
        params: z.object({ id: z.string(), collection: z.string(), doc: z.string() }),
        response: { 200: DocItem, ...errors(401, 403, 404) },
      },
    },
    async (req) => browser.doc(targetApp(req).id, req.params.collection, req.params.doc),
  );
  api.delete(
    `${base}/docs/:collection/:doc`,
    {
      config: write,
      schema: {
        params: z.object({ id: z.string(), collection: z.string(), doc: z.string() }),
        response: { 204: NoBody, ...errors(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await browser.docDelete(targetApp(req).id, req.params.collection, req.params.doc);
      return reply.code(204).send();
    },
  );
};
