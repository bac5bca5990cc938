// Type-level checks of the gallery's route auth (type-checked by `npm run typecheck`, never run).
import { typed } from "@app/kit/http/typed-routes";
import Fastify from "fastify";
import { galleryAuth, principal } from "../../src/http/route-auth.js";

const api = typed(Fastify());
api.get(
  "/ok",
  { config: { auth: galleryAuth.spec({ minRole: "host", write: true }) } },
  async (req) => principal(req).role,
);
// @ts-expect-error an auth kind the gallery does not have
galleryAuth.spec("admin");
// @ts-expect-error a role the gallery does not have
galleryAuth.spec({ minRole: "owner" });
// @ts-expect-error another service's spec (the platform's scope)
galleryAuth.spec({ scope: "app:admin" });
// @ts-expect-error a plain spec, not made by galleryAuth
api.get("/plain", { config: { auth: "user" } }, async () => "x");
// @ts-expect-error the principal is the gallery's user, not the platform's
api.get("/wrong", { config: { auth: galleryAuth.spec("user") } }, async (req) => principal(req).adminId);
