import { forbidden } from "@app/kit/errors";
import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { createAdmins, USERNAME_RE } from "../../control/admins.js";
import { resolveApp } from "../../control/apps.js";
import { appsRepo } from "../../control/apps-repository.js";
import { hasScope, INSTANCE_ROLES, SCOPES } from "../../control/scopes.js";
import { listOf, PageQuery, pageOf } from "../paging.js";
import { platformAuth, principal } from "../route-auth.js";
import { Admin, ApiKey, NewApiKey, page } from "../schemas.js";

const username = z.string().regex(USERNAME_RE, "1 to 64 letters, digits or _ . @ -");
const password = z.string().min(8, "must be at least 8 characters").max(1024);
const createBody = z.strictObject({
  username,
  password,
  instance_role: z.enum(INSTANCE_ROLES).optional(),
  email: z.email().nullable().optional(),
  is_active: z.boolean().optional(),
});
const patchBody = z.strictObject({
  username: username.optional(),
  password: password.optional(),
  instance_role: z.enum(INSTANCE_ROLES).optional(),
  email: z.email().nullable().optional(),
  is_active: z.boolean().optional(),
});
const keyBody = z.strictObject({
  name: z.string().min(1).max(200),
  scopes: z.array(z.enum(SCOPES)).min(1).max(SCOPES.length),
  app_id: z.string().nullable().optional(),
  expires_in_days: z.number().int().min(1).max(3650).optional(),
});

/** Admin accounts (/admin/admins) and API keys (/admin/api-keys). */
export const adminRoutes: RouteModule = (app, ctx) => {
  const admins = createAdmins({ database: ctx.database, clock: ctx.clock });
  const apps = appsRepo(ctx.database);
  const base = "/api/v1/admin/admins";
  const api = typed(app);
  const idParams = z.object({ id: z.string() });

  api.get(
    base,
    {
      config: { auth: platformAuth.spec({ scope: "admin:read" }) },
      schema: { querystring: PageQuery, response: { 200: page(Admin), ...errors(401, 403, 422) } },
    },
    async (req) => {
      const p = pageOf(req.query);
      return listOf(await admins.repo.list(p), p.limit);
    },
  );

  api.post(
    base,
    {
      config: { auth: platformAuth.spec({ scope: "admin:write" }) },
      schema: { body: createBody, response: { 201: Admin, ...errors(401, 403, 409, 422) } },
    },
    async (req, reply) => reply.code(201).send(await admins.create(req.body)),
  );

  api.get(
    `${base}/:id`,
    {
      config: { auth: platformAuth.spec({}) },
      schema: { params: idParams, response: { 200: Admin, ...errors(401, 403, 404) } },
    },
    async (req) => {
      if (principal(req).adminId !== req.params.id) ctx.gate.assertScope(principal(req), "admin:read");
      return admins.get(req.params.id);
    },
  );

  api.patch(
    `${base}/:id`,
    {
      config: { auth: platformAuth.spec({}) },
      schema: {
        params: idParams,
        body: patchBody,
        response: { 200: Admin, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (req) => {
      const p = principal(req);
      const body = req.body;
      // Anyone may change their own password and email; everything else needs admin:write.
      const selfOnly =
        p.adminId === req.params.id &&
        body.instance_role === undefined &&
        body.is_active === undefined &&
        body.username === undefined;
      if (!selfOnly) ctx.gate.assertScope(p, "admin:write");
      return admins.update(req.params.id, body, p.sessionId);
    },
  );

  api.delete(
    `${base}/:id`,
    {
      config: { auth: platformAuth.spec({ scope: "admin:write" }) },
      schema: { params: idParams, response: { 204: NoBody, ...errors(401, 403, 404, 409) } },
    },
    async (req, reply) => {
      await admins.remove(req.params.id);
      return reply.code(204).send();
    },
  );

  api.get(
    "/api/v1/admin/api-keys",
    {
      config: { auth: platformAuth.spec({}) },
      schema: { querystring: PageQuery, response: { 200: page(ApiKey), ...errors(401, 422) } },
    },
    async (req) => {
      const p = pageOf(req.query);
      return listOf(await admins.listKeys(principal(req), p), p.limit);
    },
  );

  api.post(
    "/api/v1/admin/api-keys",
    {
      config: { auth: platformAuth.spec({}) },
      schema: { body: keyBody, response: { 201: NewApiKey, ...errors(401, 403, 404, 422) } },
    },
    async (req, reply) => {
      const p = principal(req);
      if (p.kind === "api_key" && !hasScope(p, "admin:write"))
        throw forbidden("An API key cannot mint API keys without admin:write.");
      const appId = req.body.app_id ? (await resolveApp(apps, req.body.app_id)).id : null;
      return reply.code(201).send(await admins.createKey(p, { ...req.body, app_id: appId }));
    },
  );

  api.delete(
    "/api/v1/admin/api-keys/:id",
    {
      config: { auth: platformAuth.spec({}) },
      schema: { params: idParams, response: { 204: NoBody, ...errors(401, 403, 404) } },
    },
    async (req, reply) => {
      await admins.deleteKey(principal(req), req.params.id);
      return reply.code(204).send();
    },
  );
};
