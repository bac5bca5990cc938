// Type-level checks of per-service route auth (type-checked by `npm run typecheck`, never run):
// two services with different specs in one program, each route checked against its own.
import Fastify from "fastify";
import { routeAuth, typed } from "../src/http/typed-routes.js";

const one = routeAuth<"user" | "admin", { name: string }>();
const two = routeAuth<{ scope: "read" | "write" }, { id: number }>();
const api = typed(Fastify());

api.get("/one", { config: { auth: one.spec("admin") } }, async (req) => one.principal(req).name);
api.get("/two", { config: { auth: two.spec({ scope: "write" }) } }, async (req) => two.principal(req).id);

// @ts-expect-error an auth kind the service does not have
one.spec("root");
// @ts-expect-error another service's spec
two.spec("user");
// @ts-expect-error a plain spec, not made by a service's routeAuth
api.get("/plain", { config: { auth: "user" } }, async () => "x");
// @ts-expect-error the principal is the service's own type
api.get("/wrong", { config: { auth: one.spec("user") } }, async (req) => one.principal(req).id);
