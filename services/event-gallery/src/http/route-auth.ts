import { installRouteAuth } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import type { AuthedUser, GalleryContext } from "../context.js";
import type { Role } from "../db/schema.js";

/**
 * A gallery route's `config.auth`: `"user"` for any signed-in user (banned users keep read
 * access), or the options of `requireUser`: `minRole` (403 `forbidden` below it), `write`
 * (403 `banned` for a banned user), `allowMediaToken` (`?t=` instead of the bearer).
 */
export type GalleryAuth = "user" | { minRole?: Role; write?: boolean; allowMediaToken?: boolean };

declare module "@app/kit/http/typed-routes" {
  interface RouteAuthTypes {
    spec: GalleryAuth;
    principal: AuthedUser;
  }
}

/** Shorthands for the common specs. */
export const auth = {
  user: { auth: "user" },
  writer: { auth: { write: true } },
  host: { auth: { minRole: "host" } },
  hostWrite: { auth: { minRole: "host", write: true } },
  admin: { auth: { minRole: "admin" } },
  adminWrite: { auth: { minRole: "admin", write: true } },
} as const satisfies Record<string, { auth: GalleryAuth }>;

/** The gallery's one auth hook: resolves `config.auth` into `req.principal` (the live user). */
export function installGalleryAuth(app: FastifyInstance, ctx: GalleryContext): void {
  installRouteAuth<GalleryAuth, AuthedUser>(app, (req, spec) =>
    ctx.auth.requireUser(req, spec === "user" ? {} : spec),
  );
}
