import { installRouteAuth } from "@app/kit/http/typed-routes";
import type { FastifyInstance } from "fastify";
import type { Credential, Guard, Scope } from "./guard.js";

declare module "@app/kit/http/typed-routes" {
  interface RouteAuthTypes {
    /** `"api"`: MCP_AUTH_TOKEN only (the connector token gets 403); `"mcp"`: either secret. */
    spec: Scope;
    principal: Credential;
  }
}

/**
 * The bridge's one auth hook for its HTTP API: a route with `config: { auth: "api" }` needs the
 * shared secret. onRequest, so nothing of an unauthenticated request's body is read. (/mcp keeps
 * its own onRequest: the MCP SDK owns that route.)
 */
export function installBridgeAuth(app: FastifyInstance, guard: Guard): void {
  installRouteAuth<Scope, Credential>(app, (req, scope) => guard.authenticate(req, scope), {
    hook: "onRequest",
  });
}
