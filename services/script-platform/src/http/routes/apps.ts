import { forbidden } from "@app/kit/errors";
import { errors, NoBody, typed } from "@app/kit/http/typed-routes";
import type { FastifyRequest } from "fastify";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { createAdmins } from "../../control/admins.js";
import { createApps } from "../../control/apps.js";
import { APP_ROLES, type AppScope, isAppOwner, visibleApps } from "../../control/scopes.js";
import { listOf, PageQuery, pageOf } from "../paging.js";
import { platformAuth, principal, targetApp } from "../route-auth.js";
import { App, AppDetail, Domain, Member, Membership, page, SlugStatus } from "../schemas.js";

const createBody = z.strictObject({
  slug: z.string().max(200),
  name: z.string().min(1).max(200).optional(),
  description: z.string().max(10_000).optional(),
  force: z.boolean().optional(),
});
const updateBody = z.strictObject({
  slug: z.string().max(200).optional(),
  name: z.string().min(1).max(200).optional(),
  description: z.string().max(10_000).optional(),
  force: z.boolean().optional(),
});
const slugBody = z.strictObject({ slug: z.string().max(200) });
const domainBody = z.strictObject({ host: z.string().min(1).max(300) });
const memberBody = z.strictObject({ role: z.enum(APP_ROLES) });

/** Apps, slug check and takeover, domain claims and members under /api/v1/admin/apps. */
export const appRoutes: RouteModule = (app, ctx) => {
  const apps = createApps({
    database: ctx.database,
    clock: ctx.clock,
    filesRoot: ctx.paths.filesRoot,
    onChanged: (appId) => ctx.routeTable.changed(appId),
  });
  const admins = createAdmins({ database: ctx.database, clock: ctx.clock });
  const base = "/api/v1/admin/apps";
  const api = typed(app);

  /**
   * The app named in the path is resolved by the auth hook (404 `app_not_found`; a GET of a
   * retired slug answers 308 to the canonical path) and `scope` is checked on it.
   */
  const onApp = (scope: AppScope) => ({
    auth: platformAuth.spec({ scope, appParam: "app", canonical: true }),
  });
  const appParams = z.object({ app: z.string() });
  const owner = (req: FastifyRequest, what: string) => {
    if (!isAppOwner(principal(req), targetApp(req).id))
      throw forbidden(`Only an owner of the app can ${what}.`);
  };

  api.get(
    base,
    {
      config: { auth: platformAuth.spec({}) },
      schema: { querystring: PageQuery, response: { 200: page(App), ...errors(401, 422) } },
    },
    async (req) => {
      const p = pageOf(req.query);
      return listOf(await apps.repo.list({ ...p, only: visibleApps(principal(req)) }), p.limit);
    },
  );

  api.post(
    base,
    {
      config: { auth: platformAuth.spec({ scope: "instance:admin" }) },
      schema: { body: createBody, response: { 201: App, ...errors(401, 403, 409, 422) } },
    },
    async (req, reply) => reply.code(201).send(await apps.create(req.body)),
  );

  api.get(
    `${base}/:app`,
    {
      config: onApp("app:read"),
      schema: { params: appParams, response: { 200: AppDetail, 308: NoBody, ...errors(401, 403, 404) } },
    },
    async (req) => {
      const found = targetApp(req);
      return { ...found, slug_history: await apps.repo.historyOf(found.id) };
    },
  );

  const update = {
    config: onApp("app:admin"),
    schema: {
      params: appParams,
      body: updateBody,
      response: { 200: App, ...errors(401, 403, 404, 409, 422) },
    },
  };
  api.patch(`${base}/:app`, update, async (req) => apps.update(targetApp(req).id, req.body));
  api.put(`${base}/:app`, update, async (req) => apps.update(targetApp(req).id, req.body));

  api.delete(
    `${base}/:app`,
    {
      config: onApp("app:admin"),
      schema: { params: appParams, response: { 204: NoBody, ...errors(401, 403, 404) } },
    },
    async (req, reply) => {
      owner(req, "delete it");
      await apps.remove(targetApp(req).id);
      return reply.code(204).send();
    },
  );

  api.post(
    `${base}/:app/slug::check`,
    {
      config: onApp("app:admin"),
      schema: {
        params: appParams,
        body: slugBody,
        response: { 200: SlugStatus, ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => apps.slugStatus(req.body.slug, targetApp(req).id),
  );

  api.get(
    `${base}/:app/domains`,
    {
      config: onApp("app:read"),
      schema: { params: appParams, response: { 200: page(Domain), 308: NoBody, ...errors(401, 403, 404) } },
    },
    async (req) => ({ items: await apps.repo.domains(targetApp(req).id), next_cursor: null }),
  );

  api.post(
    `${base}/:app/domains`,
    {
      config: onApp("app:admin"),
      schema: {
        params: appParams,
        body: domainBody,
        response: { 201: Domain, ...errors(401, 403, 404, 409, 422) },
      },
    },
    async (req, reply) => reply.code(201).send(await apps.addDomain(targetApp(req).id, req.body.host)),
  );

  api.delete(
    `${base}/:app/domains/:domain`,
    {
      config: onApp("app:admin"),
      schema: {
        params: appParams.extend({ domain: z.string() }),
        response: { 204: NoBody, ...errors(401, 403, 404) },
      },
    },
    async (req, reply) => {
      await apps.removeDomain(targetApp(req).id, req.params.domain);
      return reply.code(204).send();
    },
  );

  api.get(
    `${base}/:app/members`,
    {
      config: onApp("app:read"),
      schema: { params: appParams, response: { 200: page(Member), 308: NoBody, ...errors(401, 403, 404) } },
    },
    async (req) => ({ items: await admins.repo.members(targetApp(req).id), next_cursor: null }),
  );

  const memberParams = appParams.extend({ admin: z.string() });
  api.put(
    `${base}/:app/members/:admin`,
    {
      config: onApp("app:admin"),
      schema: {
        params: memberParams,
        body: memberBody,
        response: { 200: Membership, ...errors(401, 403, 404, 422) },
      },
    },
    async (req) => {
      owner(req, "manage its members");
      const appId = targetApp(req).id;
      await admins.setMember(appId, req.params.admin, req.body.role);
      return { app_id: appId, admin_id: req.params.admin, role: req.body.role };
    },
  );

  api.delete(
    `${base}/:app/members/:admin`,
    {
      config: onApp("app:admin"),
      schema: { params: memberParams, response: { 204: NoBody, ...errors(401, 403, 404) } },
    },
    async (req, reply) => {
      owner(req, "manage its members");
      await admins.removeMember(targetApp(req).id, req.params.admin);
      return reply.code(204).send();
    },
  );
};
