/** The bridge's own HTTP API shapes (the portal-bridge contract) as zod schemas: routes and OpenAPI. */
import { z } from "zod";

const iso = z.string().describe("RFC 3339 UTC timestamp");

/** GET and PUT /api/token: what the bridge holds and how the keep-alive fares; never the token. */
export const TokenStatusReport = z
  .object({
    token: z.object({
      present: z.boolean(),
      source: z.enum(["env", "state", "put"]).nullable(),
      user_id: z.string().nullable(),
      issued_at: iso.nullable(),
      expires_at: iso.nullable(),
      expires_in_s: z.number().int().nullable(),
    }),
    upstream: z.object({
      idle_timeout_s: z.number(),
      last_budget_s: z.number().nullable(),
      last_ok_at: iso.nullable(),
      last_error: z.string().nullable(),
    }),
    keepalive: z.object({
      state: z.enum(["running", "retrying", "stopped", "disabled"]),
      interval_ms: z.number(),
      next_at: iso.nullable(),
      generation: z.number().int(),
      stopped_reason: z.string().nullable(),
    }),
  })
  .meta({ id: "TokenStatusReport" });

/** GET /api/setup: one line per part of the set-up, in words. */
export const SetupReport = z
  .object({
    checks: z.array(
      z.object({
        id: z.enum(["portal_token", "timetable", "public_url", "alerts"]),
        state: z.enum(["ok", "warning", "error"]),
        message: z.string(),
      }),
    ),
  })
  .meta({ id: "SetupReport" });

/** POST /api/setup/test-alert: whether the webhook took the test alert. */
export const TestAlertResult = z
  .object({
    delivered: z.boolean(),
    status: z.number().int().nullable().describe("the receiver's HTTP status; null when unreachable"),
  })
  .meta({ id: "TestAlertResult" });
