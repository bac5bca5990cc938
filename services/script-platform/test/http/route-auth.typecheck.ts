// Type-level checks of the platform's route auth (type-checked by `npm run typecheck`, never run).
import { typed } from "@app/kit/http/typed-routes";
import Fastify from "fastify";
import { platformAuth, principal } from "../../src/http/route-auth.js";

const api = typed(Fastify());
api.get(
  "/ok",
  { config: { auth: platformAuth.spec({ scope: "app:admin", appParam: "app" }) } },
  async (req) => principal(req).adminId,
);
// @ts-expect-error a scope the platform does not have
platformAuth.spec({ scope: "app:root" });
// @ts-expect-error another service's spec (the gallery's)
platformAuth.spec("user");
// @ts-expect-error a plain spec, not made by platformAuth
api.get("/plain", { config: { auth: { scope: "app:admin" } } }, async () => "x");
// @ts-expect-error the principal is an admin or key, not the gallery's user
api.get("/wrong", { config: { auth: platformAuth.spec({}) } }, async (req) => principal(req).role);
