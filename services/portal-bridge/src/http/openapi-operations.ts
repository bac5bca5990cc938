import type { OperationTable } from "@app/kit/http/openapi";

/** Summary and tag of every operation in the OpenAPI document; a test fails on a missing one. */
export const BRIDGE_OPERATIONS: OperationTable = {
  "GET /api/token": ["token", "Status of the upstream portal token"],
  "PUT /api/token": ["token", "Replace the upstream portal token"],
  "GET /api/files/{fileRecordId}/{fileName}": ["files", "Download a portal file"],
  "GET /api/setup": ["setup", "Set-up check: configuration and upstream reachability"],
  "POST /api/setup/test-alert": ["setup", "Send a test alert to the webhook"],
  "GET /token": ["token", "Token paste page (HTML; the login form without credentials)"],
  "POST /token": ["token", "Sign in to the token paste page with the shared secret"],
};
