import { routeAuth } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import type { AuthedUser, GalleryContext } from "../context.js";
import type { Role } from "../db/schema.js";

/**
 * A gallery route's `config.auth`: `"user"` for any signed-in user (banned users keep read
 * access), or the options of `requireUser`: `minRole` (403 `forbidden` below it), `write`
 * (403 `banned` for a banned user), `allowMediaToken` (`?t=` instead of the bearer).
 */
export type GalleryAuth = "user" | { minRole?: Role; write?: boolean; allowMediaToken?: boolean };

/** The gallery's route auth: `config: { auth: galleryAuth.spec(spec) }`, `principal(req)`. */
export const galleryAuth = routeAuth<GalleryAuth, AuthedUser>();

/** The live user a route with `config.auth` acts for. */
export const principal = galleryAuth.principal;

/** Shorthands for the common route configs. */
export const auth = {
  user: { auth: galleryAuth.spec("user") },
  writer: { auth: galleryAuth.spec({ write: true }) },
  host: { auth: galleryAuth.spec({ minRole: "host" }) },
  hostWrite: { auth: galleryAuth.spec({ minRole: "host", write: true }) },
  admin: { auth: galleryAuth.spec({ minRole: "admin" }) },
  adminWrite: { auth: galleryAuth.spec({ minRole: "admin", write: true }) },
};

/** The gallery's one auth hook: resolves `config.auth` into the request's principal (the live user). */
export function installGalleryAuth(app: FastifyInstance, ctx: Pick<GalleryContext, "auth">): void {
  galleryAuth.install(app, (req, spec) => ctx.auth.requireUser(req, spec === "user" ? {} : spec));
}
