import { registerOpenApi } from "@app/kit/http/openapi";
import type { FastifyInstance } from "fastify";
import { GALLERY_VERSION } from "../version.js";
import { GALLERY_OPERATIONS } from "./openapi-operations.js";

export const OPENAPI_JSON = "/api/v1/openapi.json";
export const API_DOCS = "/api/v1/docs";

/**
 * The gallery's OpenAPI 3.1 document (every route under /api/v1, from the route schemas) and its
 * reference page. Both are open: they describe the public contract and hold no data or secret.
 * Register before any route.
 */
export function registerApiDocs(app: FastifyInstance): Promise<void> {
  return registerOpenApi(app, {
    title: "event-gallery API",
    version: GALLERY_VERSION,
    operations: GALLERY_OPERATIONS,
    description: "Photo and video sharing for one event. Errors: `{error: {code, message}}`.",
    prefix: "/api/v1",
    jsonPath: OPENAPI_JSON,
    docsPath: API_DOCS,
    securitySchemes: {
      session: {
        type: "http",
        scheme: "bearer",
        description: "Session token from /join, /recover or /admin/login",
      },
    },
  });
}
