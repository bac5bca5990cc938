import { binary, errors, NoBody, typed } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import { z } from "zod";
import type { GalleryContext } from "../../context.js";
import { FAVORITES_ZIP, type FavoritesService } from "../../favorites/service.js";
import { auth, principal } from "../route-auth.js";
import { Ticket } from "../schemas.js";
import { IdParams } from "./social.js";

/** Favourites (private stars, their zip) and host highlights (issue 27, contract "Live event"). */
export function registerFavoritesRoutes(
  app: FastifyInstance,
  _ctx: GalleryContext,
  favorites: FavoritesService,
) {
  const api = typed(app);
  const params = IdParams();
  // Any signed-in user, banned ones too: a favourite is private.
  const star = { config: auth.user, schema: { params, response: { 204: NoBody, ...errors(401, 404, 429) } } };
  api.put("/upload/:id/favorite", star, async (req, reply) => {
    await favorites.setFavorite(principal(req), req.params.id, true);
    return reply.code(204).send();
  });
  api.delete("/upload/:id/favorite", star, async (req, reply) => {
    await favorites.setFavorite(principal(req), req.params.id, false);
    return reply.code(204).send();
  });

  const highlight = {
    config: auth.hostWrite,
    schema: { params, response: { 204: NoBody, ...errors(401, 403, 404) } },
  };
  api.put("/host/upload/:id/highlight", highlight, async (req, reply) => {
    await favorites.setHighlight(principal(req), req.params.id, true);
    return reply.code(204).send();
  });
  api.delete("/host/upload/:id/highlight", highlight, async (req, reply) => {
    await favorites.setHighlight(principal(req), req.params.id, false);
    return reply.code(204).send();
  });

  api.post(
    "/favorites/ticket",
    { config: auth.user, schema: { response: { 200: Ticket, ...errors(401, 429) } } },
    async (req) => favorites.issueTicket(principal(req)),
  );
  // GET only: a HEAD would spend the single-use ticket.
  api.get(
    "/favorites.zip",
    {
      exposeHeadRoute: false,
      schema: {
        querystring: z.object({ ticket: z.string().optional().catch(undefined) }),
        response: { 200: binary("application/zip", FAVORITES_ZIP), ...errors(401, 404) },
      },
    },
    async (req, reply) => {
      const stream = await favorites.openZip(req.query.ticket);
      return reply
        .type("application/zip")
        .header("content-disposition", `attachment; filename="${FAVORITES_ZIP}"`)
        .header("cache-control", "no-store")
        .send(stream);
    },
  );
}
