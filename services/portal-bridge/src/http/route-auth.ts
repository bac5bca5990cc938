import { routeAuth } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import type { Credential, Guard, Scope } from "./guard.js";

/**
 * The bridge's route auth: `config: { auth: bridgeAuth.spec("api") }` needs MCP_AUTH_TOKEN (the
 * connector token gets 403); `"mcp"` accepts either secret.
 */
export const bridgeAuth = routeAuth<Scope, Credential>();

/**
 * The bridge's one auth hook for its HTTP API. onRequest, so nothing of an unauthenticated
 * request's body is read. (/mcp keeps its own onRequest: the MCP SDK owns that route.)
 */
export function installBridgeAuth(app: FastifyInstance, guard: Guard): void {
  bridgeAuth.install(app, (req, scope) => guard.authenticate(req, scope), { hook: "onRequest" });
}
