import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance } from "fastify";
import { APP_ROUTES } from "../app-routes.js";

/** The built web app (Vite output of web/), the same relative place from src/ and from dist/. */
export const WEB_DIST = fileURLToPath(new URL("../../../web/dist/", import.meta.url));

/**
 * The app's own pages (APP_ROUTES) answer with index.html. Every other unknown path keeps the
 * common JSON 404, so nothing under /api or /media is ever answered with the app.
 */

/**
 * Root-level HTTP concerns of the web app: X-Frame-Options on every response (SAMEORIGIN for the
 * export endpoints, so a hidden same-origin frame can deliver a download; DENY elsewhere), the
 * built app's files, and index.html for the app's own pages.
 */
export async function registerWebApp(app: FastifyInstance, opts: { dir?: string } = {}): Promise<void> {
  // Callback style: every response runs it (no promise per request).
  app.addHook("onSend", (req, reply, payload, done) => {
    reply.header("x-frame-options", req.url.startsWith("/api/v1/export/") ? "SAMEORIGIN" : "DENY");
    done(null, payload);
  });

  const dir = opts.dir ?? WEB_DIST;
  const indexFile = `${dir}/index.html`;
  if (!existsSync(indexFile)) {
    app.log.warn("web app not built (run the gallery build); serving the API only");
    return;
  }
  const indexHtml = readFileSync(indexFile);
  await app.register(fastifyStatic, {
    root: dir,
    wildcard: false,
    decorateReply: false,
    dotfiles: "ignore",
    index: false,
    // Our own cache-control below, not the plugin's default.
    cacheControl: false,
    setHeaders: (res, path) => {
      // Vite fingerprints everything under assets/; the rest must be revalidated.
      res.setHeader(
        "cache-control",
        path.includes("/assets/") ? "public, max-age=31536000, immutable" : "no-cache",
      );
    },
  });
  for (const page of APP_ROUTES)
    app.get(page, async (_req, reply) =>
      reply.type("text/html; charset=utf-8").header("cache-control", "no-cache").send(indexHtml),
    );
}
