import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { notFound } from "@app/kit/errors";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance } from "fastify";
import type { RouteModule } from "../../context.js";

/** dashboard/dist, built by `vite build dashboard`; same depth from src/ and dist/ (tsc output). */
export const DASHBOARD_DIST = fileURLToPath(new URL("../../../dashboard/dist/", import.meta.url));

// Hashed bundle files never change; index.html must be re-read so a new build is picked up.
const IMMUTABLE = "public, max-age=31536000, immutable";
// CodeMirror injects its theme as <style> elements, hence 'unsafe-inline' for styles only.
const CSP =
  "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; " +
  "frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'";

/**
 * Serve the admin dashboard (a single-page app) under /admin/. Paths without a file extension fall
 * back to index.html so client-side routes survive a reload; missing asset files stay 404. Only
 * /admin/* is covered: /api/ and user routes never see the fallback.
 */
export async function registerDashboard(app: FastifyInstance, opts: { root?: string } = {}): Promise<void> {
  const root = opts.root ?? DASHBOARD_DIST;
  app.get("/admin", (_req, reply) => reply.redirect("/admin/", 308));

  if (!existsSync(join(root, "index.html"))) {
    app.log.warn("admin dashboard is not built; run `npm run build -w services/script-platform`");
    app.get("/admin/*", async () => {
      throw notFound("The admin dashboard is not built on this server.", "dashboard_not_built");
    });
    return;
  }

  await app.register(fastifyStatic, {
    root,
    prefix: "/admin/",
    // Routes for the files present at start-up; everything else reaches the SPA fallback below.
    wildcard: false,
    cacheControl: false,
    setHeaders(res, path) {
      res.setHeader("cache-control", path.startsWith(join(root, "assets")) ? IMMUTABLE : "no-cache");
      res.setHeader("x-content-type-options", "nosniff");
      res.setHeader("referrer-policy", "same-origin");
      if (path.endsWith(".html")) {
        res.setHeader("content-security-policy", CSP);
        res.setHeader("x-frame-options", "DENY");
      }
    },
  });

  app.get("/admin/*", async (req, reply) => {
    const path = (req.params as { "*": string })["*"];
    // A last segment with an extension names a file (a stale asset, a typo): answer 404, not HTML.
    if (/\.[A-Za-z0-9]+$/.test(path)) throw notFound();
    return reply.sendFile("index.html");
  });
}

/** The route module registered in app.ts. */
export const dashboardRoutes: RouteModule = (app) => registerDashboard(app);
