import { forbidden } from "@app/kit/errors";
import { parseInput } from "@app/kit/validate";
import { z } from "zod";
import type { RouteModule } from "../../context.js";
import { createAdmins, USERNAME_RE } from "../../control/admins.js";
import { resolveApp } from "../../control/apps.js";
import { appsRepo } from "../../control/apps-repo.js";
import { hasScope, INSTANCE_ROLES, SCOPES } from "../../control/scopes.js";
import { listOf, pageOf } from "../paging.js";

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

  app.get(base, async (req) => {
    await ctx.gate.requireAdmin(req, "admin:read");
    const page = pageOf(req.query);
    return listOf(await admins.repo.list(page), page.limit);
  });

  app.post(base, async (req, reply) => {
    await ctx.gate.requireAdmin(req, "admin:write");
    const body = parseInput(createBody, req.body);
    return reply.code(201).send(await admins.create(body));
  });

  app.get(`${base}/:id`, async (req) => {
    const id = (req.params as { id: string }).id;
    const p = await ctx.gate.requireAdmin(req);
    if (p.adminId !== id) ctx.gate.assertScope(p, "admin:read");
    return admins.get(id);
  });

  app.patch(`${base}/:id`, async (req) => {
    const id = (req.params as { id: string }).id;
    const p = await ctx.gate.requireAdmin(req);
    const body = parseInput(patchBody, req.body);
    // Anyone may change their own password and email; everything else needs admin:write.
    const selfOnly =
      p.adminId === id &&
      body.instance_role === undefined &&
      body.is_active === undefined &&
      body.username === undefined;
    if (!selfOnly) ctx.gate.assertScope(p, "admin:write");
    return admins.update(id, body, p.sessionId);
  });

  app.delete(`${base}/:id`, async (req, reply) => {
    await ctx.gate.requireAdmin(req, "admin:write");
    await admins.remove((req.params as { id: string }).id);
    return reply.code(204).send();
  });

  app.get("/api/v1/admin/api-keys", async (req) => {
    const p = await ctx.gate.requireAdmin(req);
    const page = pageOf(req.query);
    return listOf(await admins.listKeys(p, page), page.limit);
  });

  app.post("/api/v1/admin/api-keys", async (req, reply) => {
    const p = await ctx.gate.requireAdmin(req);
    if (p.kind === "api_key" && !hasScope(p, "admin:write"))
      throw forbidden("An API key cannot mint API keys without admin:write.");
    const body = parseInput(keyBody, req.body);
    const appId = body.app_id ? (await resolveApp(apps, body.app_id)).id : null;
    return reply.code(201).send(await admins.createKey(p, { ...body, app_id: appId }));
  });

  app.delete("/api/v1/admin/api-keys/:id", async (req, reply) => {
    const p = await ctx.gate.requireAdmin(req);
    await admins.deleteKey(p, (req.params as { id: string }).id);
    return reply.code(204).send();
  });
};
