/**
 * The platform API's shapes as zod schemas (the script-platform contract): routes declare them,
 * the OpenAPI document is built from them, and the dashboard takes its types from them
 * (`import type` only). Imports zod and nothing else, so the dashboard build can read it.
 *
 * Response objects are `z.object` (extra fields pass): the schema names what clients can rely on.
 */
import { z } from "zod";

const iso = z.string().describe("RFC 3339 UTC timestamp");

/** `{items, next_cursor}` (null at the end), the contract's list shape. */
export const page = <T extends z.ZodType>(item: T) =>
  z.object({ items: z.array(item), next_cursor: z.string().nullable() });

export const Admin = z
  .object({
    id: z.string(),
    username: z.string(),
    instance_role: z.string(),
    email: z.string().nullable().optional(),
    is_active: z.boolean().optional(),
  })
  .meta({ id: "Admin" });
export const LoginResult = z.object({ token: z.string(), expires_at: iso, admin: Admin.optional() });
export const Me = z.object({
  admin: Admin.nullable(),
  kind: z.enum(["admin", "api_key"]),
  instance_role: z.string().nullable(),
  scopes: z.array(z.string()),
  app_roles: z.record(z.string(), z.string()),
  app_id: z.string().nullable(),
});
export const ApiKey = z
  .object({ id: z.string(), name: z.string(), scopes: z.array(z.string()), app_id: z.string().nullable() })
  .meta({ id: "ApiKey" });
export const NewApiKey = ApiKey.extend({ secret: z.string().describe("Shown once, at creation") });

export const App = z
  .object({
    id: z.string(),
    slug: z.string(),
    name: z.string(),
    description: z.string().nullable().optional(),
    created_at: iso.optional(),
  })
  .meta({ id: "App" });
export const AppDetail = App.extend({ slug_history: z.array(z.unknown()) });
export const SlugStatus = z.object({ slug: z.string() });
export const Domain = z
  .object({ id: z.string(), host: z.string(), created_at: iso.optional() })
  .meta({ id: "Domain" });
export const Member = z.object({ admin_id: z.string(), role: z.string() });
export const Membership = z.object({ app_id: z.string(), admin_id: z.string(), role: z.string() });

export const ScriptKind = z.enum(["endpoint", "module"]);
export const Script = z
  .object({
    id: z.string(),
    app_id: z.string(),
    name: z.string(),
    kind: ScriptKind,
    source: z.string(),
    description: z.string().nullable().optional(),
    timeout_seconds: z.number().nullable().optional(),
    sandbox: z.record(z.string(), z.unknown()).nullable().optional(),
    updated_at: iso.optional(),
    language: z.enum(["javascript", "typescript"]).optional(),
    version: z.number().int().optional(),
  })
  .meta({ id: "Script" });

export const Route = z
  .object({
    id: z.string(),
    script_id: z.string(),
    host_kind: z.enum(["any", "strict", "wildcard"]),
    host: z.string().nullable().optional(),
    path: z.string(),
    path_kind: z.string().optional(),
    method: z.string(),
    dispatch_mode: z.enum(["sync", "async"]),
  })
  .meta({ id: "Route" });
export const RouteCheck = z.object({
  ok: z.boolean(),
  app_id: z.string(),
  route: z.unknown(),
  conflict: z.unknown(),
});
export const MatchResult = z.union([
  z.object({
    matched: z.literal(true),
    app_id: z.string(),
    script_id: z.string(),
    route: Route,
    params: z.record(z.string(), z.string()),
    rest: z.string(),
  }),
  z.object({ matched: z.literal(false) }),
]);

export const RetryPolicy = z.object({
  max_attempts: z.number().int(),
  backoff_ms: z.number().int(),
  max_backoff_ms: z.number().int(),
});
/** A trigger with its kind's detail flattened in (contracts: trigger bodies). */
export const Trigger = z
  .object({
    id: z.string(),
    app_id: z.string(),
    kind: z.string(),
    script_id: z.string(),
    enabled: z.boolean(),
    retry: RetryPolicy,
    created_at: iso.optional(),
    registered_by_principal: z.unknown().optional(),
    collection: z.string().optional().describe("kv, docs, files"),
    operations: z.array(z.string()).optional().describe("kv, docs, files; empty = all"),
    topic: z.string().optional().describe("pubsub"),
    schedule: z.string().optional().describe("cron"),
    timezone: z.string().optional().describe("cron"),
    next_due_at: iso.nullable().optional().describe("cron"),
    has_inbound_secret: z.boolean().optional().describe("email"),
    detail: z.record(z.string(), z.unknown()).optional().describe("The detail nested (older servers)"),
  })
  .meta({ id: "Trigger" });

export const LogLine = z.object({
  level: z.string().optional(),
  message: z.string().optional(),
  msg: z.string().optional(),
  args: z.array(z.unknown()).optional(),
  at: iso.optional(),
  ts: iso.optional(),
});
export const Execution = z
  .object({
    id: z.string(),
    script_id: z.string().nullable().optional(),
    script_name: z.string().nullable().optional(),
    status: z.enum(["ok", "error", "timeout", "limit"]),
    invocation_type: z.string().optional(),
    started_at: iso.optional(),
    created_at: iso.optional(),
    duration_ms: z.number().nullable().optional(),
    error: z.unknown().optional(),
    logs: z.array(LogLine).optional(),
  })
  .meta({ id: "Execution" });

export const DeadLetter = z
  .object({
    id: z.string(),
    script_id: z.string().nullable().optional(),
    source_kind: z.string().optional(),
    error: z.unknown().optional(),
    attempts: z.number().optional(),
    created_at: iso.optional(),
    resolution: z.string().nullable().optional(),
    resolved_at: iso.nullable().optional(),
    execution_id: z.string().nullable().optional(),
    event: z.unknown().optional(),
  })
  .meta({ id: "DeadLetter" });

export const Secret = z.object({ name: z.string(), updated_at: iso }).meta({ id: "Secret" });
export const Topic = z.object({ name: z.string(), external: z.boolean() }).meta({ id: "Topic" });
export const StoredFile = z
  .object({
    collection: z.string(),
    name: z.string(),
    content_type: z.string().nullable().optional(),
    size: z.number().optional(),
    sha256: z.string().optional(),
  })
  .meta({ id: "File" });

export const Version = z.object({
  product: z.string(),
  sdk: z.string(),
  api: z.union([z.string(), z.number()]),
  schema: z.union([z.string(), z.number()]),
  wire: z.union([z.string(), z.number()]),
  public_base_url: z.string(),
});

export type Admin = z.infer<typeof Admin>;
export type LoginResult = z.infer<typeof LoginResult>;
export type App = z.infer<typeof App>;
export type Domain = z.infer<typeof Domain>;
export type ScriptKind = z.infer<typeof ScriptKind>;
export type Script = z.infer<typeof Script>;
export type Route = z.infer<typeof Route>;
export type MatchResult = z.infer<typeof MatchResult>;
export type Trigger = z.infer<typeof Trigger>;
export type LogLine = z.infer<typeof LogLine>;
export type Execution = z.infer<typeof Execution>;
export type DeadLetter = z.infer<typeof DeadLetter>;
export type Secret = z.infer<typeof Secret>;
export type Topic = z.infer<typeof Topic>;
