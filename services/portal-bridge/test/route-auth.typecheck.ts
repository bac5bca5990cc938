// Type-level checks of the bridge's route auth (type-checked by `npm run typecheck`, never run).
import { typed } from "@app/kit/http/typed-routes";
import Fastify from "fastify";
import { bridgeAuth } from "../src/http/route-auth.js";

const api = typed(Fastify());
api.get("/ok", { config: { auth: bridgeAuth.spec("api") } }, async (req) => bridgeAuth.principal(req));
// @ts-expect-error a scope the bridge does not have
bridgeAuth.spec("admin");
// @ts-expect-error a plain spec, not made by bridgeAuth
api.get("/plain", { config: { auth: "api" } }, async () => "x");
// @ts-expect-error the principal is a Credential (a string), not an object
api.get("/wrong", { config: { auth: bridgeAuth.spec("mcp") } }, async (req) => bridgeAuth.principal(req).id);
