import { registerOpenApi } from "@app/kit/http/openapi";
import type { FastifyInstance } from "fastify";
import { BRIDGE_VERSION } from "../version.js";
import { BRIDGE_OPERATIONS } from "./openapi-operations.js";

export const OPENAPI_JSON = "/api/openapi.json";
export const API_DOCS = "/api/docs";

/**
 * The bridge's HTTP API (not /mcp, which is MCP over the SDK, and never the path-secret route)
 * as OpenAPI 3.1 at /api/openapi.json, with the reference page at /api/docs. Both are open: they
 * describe routes and shapes only (no secret, no token, no path secret) and every route they
 * list still needs its credential. Register before any route.
 */
export function registerApiDocs(app: FastifyInstance): Promise<void> {
  return registerOpenApi(app, {
    title: "portal-bridge HTTP API",
    version: BRIDGE_VERSION,
    operations: BRIDGE_OPERATIONS,
    description: "The bridge's own endpoints beside /mcp. Errors: `{error: {code, message}}`.",
    prefix: ["/api", "/token", "/oauth", "/.well-known"],
    jsonPath: OPENAPI_JSON,
    docsPath: API_DOCS,
    securitySchemes: {
      secret: {
        type: "http",
        scheme: "bearer",
        description: "MCP_AUTH_TOKEN (also as X-Api-Key or X-Auth-Token)",
      },
    },
  });
}
