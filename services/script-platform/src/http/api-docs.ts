import { registerOpenApi } from "@app/kit/http/openapi";
import type { FastifyInstance } from "fastify";
import { PRODUCT_VERSION } from "../version.js";
import { SESSION_COOKIE } from "./admin-gate.js";
import { PLATFORM_OPERATIONS, PLATFORM_RENAMES } from "./openapi-operations.js";

export const OPENAPI_JSON = "/api/v1/openapi.json";
export const API_DOCS = "/api/v1/docs";

/**
 * The platform's OpenAPI 3.1 document (the Admin API and the other /api/v1 routes, plus
 * /version) and its reference page. Both are open: they describe the API's shapes, never an
 * app, a script or a secret, and every admin route they list still needs its credential.
 * User routes (scripts' own paths) are each app's API, not this one. Register before any route.
 */
export function registerApiDocs(app: FastifyInstance): Promise<void> {
  return registerOpenApi(app, {
    title: "script-platform API",
    version: PRODUCT_VERSION,
    operations: PLATFORM_OPERATIONS,
    renames: PLATFORM_RENAMES,
    description: "Admin API of the script platform. Errors: `{error: {code, message}}`.",
    prefix: ["/api/v1", "/version"],
    jsonPath: OPENAPI_JSON,
    docsPath: API_DOCS,
    securitySchemes: {
      bearer: { type: "http", scheme: "bearer", description: "Admin session token or API key" },
      apiKey: { type: "apiKey", in: "header", name: "x-api-key" },
      cookie: { type: "apiKey", in: "cookie", name: SESSION_COOKIE },
    },
  });
}
