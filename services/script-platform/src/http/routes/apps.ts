import { forbidden } from "@app/kit/errors";
import { parseInput } from "@app/kit/validate";
import type { FastifyReply, FastifyRequest } from "fastify";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { createAdmins } from "../../control/admins.js";
import { createApps, resolveAppRef } from "../../control/apps.js";
import type { AppRow } from "../../control/apps-repo.js";
import { APP_ROLES, isAppOwner, visibleApps } from "../../control/scopes.js";
import { listOf, pageOf } from "../paging.js";

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

  /**
   * The app named in the path. A retired slug on a GET answers 308 to the canonical path (and
   * returns null); other methods resolve it transparently.
   */
  async function appOf(req: FastifyRequest, reply: FastifyReply): Promise<AppRow | null> {
    const ref = (req.params as { app: string }).app;
    const { app: found, redirectedFrom } = await resolveAppRef(apps.repo, ref);
    if (redirectedFrom && (req.method === "GET" || req.method === "HEAD")) {
      const [path, query] = req.url.split("?");
      const rest = (path ?? "").slice(`${base}/${encodeURIComponent(ref)}`.length);
      const target = `${base}/${found.slug}${rest}${query !== undefined ? `?${query}` : ""}`;
      await reply.redirect(target, 308);
      return null;
    }
    return found;
  }

  app.get(base, async (req) => {
    const p = await ctx.gate.requireAdmin(req);
    const page = pageOf(req.query);
    const items = await apps.repo.list({ ...page, only: visibleApps(p) });
    return listOf(items, page.limit);
  });

  app.post(base, async (req, reply) => {
    await ctx.gate.requireAdmin(req, "instance:admin");
    const body = parseInput(createBody, req.body);
    return reply.code(201).send(await apps.create(body));
  });

  app.get(`${base}/:app`, async (req, reply) => {
    const found = await appOf(req, reply);
    if (!found) return reply;
    await ctx.gate.requireAdmin(req, "app:read", found.id);
    return { ...found, slug_history: await apps.repo.historyOf(found.id) };
  });

  const update = async (req: FastifyRequest, reply: FastifyReply) => {
    const found = await appOf(req, reply);
    if (!found) return reply;
    await ctx.gate.requireAdmin(req, "app:admin", found.id);
    const body = parseInput(updateBody, req.body);
    return apps.update(found.id, body);
  };
  app.patch(`${base}/:app`, update);
  app.put(`${base}/:app`, update);

  app.delete(`${base}/:app`, async (req, reply) => {
    const found = await appOf(req, reply);
    if (!found) return reply;
    const p = await ctx.gate.requireAdmin(req, "app:admin", found.id);
    if (!isAppOwner(p, found.id)) throw forbidden("Only an owner of the app can delete it.");
    await apps.remove(found.id);
    return reply.code(204).send();
  });

  app.post(`${base}/:app/slug::check`, async (req, reply) => {
    const found = await appOf(req, reply);
    if (!found) return reply;
    await ctx.gate.requireAdmin(req, "app:admin", found.id);
    const body = parseInput(slugBody, req.body);
    return apps.slugStatus(body.slug, found.id);
  });

  app.get(`${base}/:app/domains`, async (req, reply) => {
    const found = await appOf(req, reply);
    if (!found) return reply;
    await ctx.gate.requireAdmin(req, "app:read", found.id);
    return { items: await apps.repo.domains(found.id), next_cursor: null };
  });

  app.post(`${base}/:app/domains`, async (req, reply) => {
    const found = await appOf(req, reply);
    if (!found) return reply;
    await ctx.gate.requireAdmin(req, "app:admin", found.id);
    const body = parseInput(domainBody, req.body);
    return reply.code(201).send(await apps.addDomain(found.id, body.host));
  });

  app.delete(`${base}/:app/domains/:domain`, async (req, reply) => {
    const found = await appOf(req, reply);
    if (!found) return reply;
    await ctx.gate.requireAdmin(req, "app:admin", found.id);
    await apps.removeDomain(found.id, (req.params as { domain: string }).domain);
    return reply.code(204).send();
  });

  app.get(`${base}/:app/members`, async (req, reply) => {
    const found = await appOf(req, reply);
    if (!found) return reply;
    await ctx.gate.requireAdmin(req, "app:read", found.id);
    return { items: await admins.repo.members(found.id), next_cursor: null };
  });

  app.put(`${base}/:app/members/:admin`, async (req, reply) => {
    const found = await appOf(req, reply);
    if (!found) return reply;
    const p = await ctx.gate.requireAdmin(req, "app:admin", found.id);
    if (!isAppOwner(p, found.id)) throw forbidden("Only an owner of the app can manage its members.");
    const body = parseInput(memberBody, req.body);
    const adminId = (req.params as { admin: string }).admin;
    await admins.setMember(found.id, adminId, body.role);
    return { app_id: found.id, admin_id: adminId, role: body.role };
  });

  app.delete(`${base}/:app/members/:admin`, async (req, reply) => {
    const found = await appOf(req, reply);
    if (!found) return reply;
    const p = await ctx.gate.requireAdmin(req, "app:admin", found.id);
    if (!isAppOwner(p, found.id)) throw forbidden("Only an owner of the app can manage its members.");
    await admins.removeMember(found.id, (req.params as { admin: string }).admin);
    return reply.code(204).send();
  });
};
