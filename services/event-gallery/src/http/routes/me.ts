import { errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import type { GalleryContext } from "../../context.js";
import { meContext } from "../../identity/context.js";
import { auth, principal } from "../route-auth.js";
import { Me } from "../schemas.js";

/** GET /me/context → `{user, event, pin_reset_pending}`. */
export function registerMeRoutes(app: FastifyInstance, ctx: GalleryContext) {
  typed(app).get(
    "/me/context",
    { config: auth.user, schema: { response: { 200: Me, ...errors(401) } } },
    async (req) => meContext(ctx, principal(req)),
  );
}
