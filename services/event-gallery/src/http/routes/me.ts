import { errors, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import type { GalleryContext } from "../../context.js";
import { eventView } from "../../event/state.js";
import { auth } from "../route-auth.js";
import { Me } from "../schemas.js";

/** GET /me/context → `{user, event, pin_reset_pending}`. */
export function registerMeRoutes(app: FastifyInstance, ctx: GalleryContext) {
  typed(app).get(
    "/me/context",
    { config: auth.user, schema: { response: { 200: Me, ...errors(401) } } },
    async (req) => {
      const me = req.principal;
      const { db } = ctx.database;
      const row = await db
        .selectFrom("users")
        .select("pin_reset_requested_at")
        .where("id", "=", me.id)
        .executeTakeFirstOrThrow();
      return {
        user: { id: me.id, display_name: me.display_name, role: me.role, is_banned: me.is_banned },
        event: await eventView(db, ctx.settings),
        pin_reset_pending: row.pin_reset_requested_at !== null,
      };
    },
  );
}
