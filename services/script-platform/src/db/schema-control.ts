import type { Generated } from "@app/kit/db";

/**
 * Row types of the control tables (see migrations/0001).
 * Timestamps are ISO strings, booleans 0/1, JSON through dialect.json / dialect.fromJson.
 */
export interface AdminsTable {
  id: string;
  username: string;
  password_hash: string;
  /** `admin` (every scope on every app) or `member` (only what app_members grant). */
  instance_role: string;
  is_active: number;
  email: string | null;
  mfa_secret: string | null;
  created_at: string;
  updated_at: string;
  last_login_at: string | null;
}

export interface AdminSessionsTable {
  id: string;
  admin_id: string;
  /** SHA-256 hex of the opaque token; the token itself is never stored. */
  token_hash: string;
  created_at: string;
  last_used_at: string;
  expires_at: string;
}

export interface ApiKeysTable {
  id: string;
  admin_id: string;
  /** When set, the key works only on this app. */
  app_id: string | null;
  name: string;
  /** First characters of the secret, shown in lists so a key can be recognised. */
  prefix: string;
  secret_hash: string;
  /** JSON array of scope names. */
  scopes: unknown;
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
}

export interface AppsTable {
  id: string;
  slug: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
}

export interface AppMembersTable {
  app_id: string;
  admin_id: string;
  /** owner, admin, editor, viewer */
  role: string;
  created_at: string;
}

export interface AppSlugHistoryTable {
  slug: string;
  app_id: string;
  retired_at: string;
}

export interface AppDomainsTable {
  id: string;
  app_id: string;
  /** Lowercase host; a wildcard claim is stored as `*.example.com`. */
  host: string;
  /** exact | wildcard */
  kind: string;
  created_at: string;
}

export interface ScriptsTable {
  id: string;
  app_id: string;
  name: string;
  /** endpoint | module */
  kind: string;
  source: string;
  description: string;
  timeout_seconds: number;
  /** JSON object of sandbox overrides; `{}` means platform defaults. */
  sandbox: unknown;
  memory_limit_mb: number | null;
  created_at: string;
  updated_at: string;
  /** 0004: `javascript` | `typescript`. */
  language: Generated<string>;
  /** 0004: the author's TypeScript text (`source` holds the stripped JavaScript); NULL for JavaScript. */
  authored_source: string | null;
  /** 0004: 1 on create, +1 on every save that changes source, language or sandbox. */
  version: Generated<number>;
}

/** 0004: every saved version of a script (the author's source). */
export interface ScriptVersionsTable {
  script_id: string;
  version: number;
  language: string;
  source: string;
  sandbox: unknown;
  created_by: string | null;
  created_at: string;
}

/** The dependency graph: one row per `import ... from "<name>"` of a script. */
export interface ScriptImportsTable {
  script_id: string;
  app_id: string;
  imported_name: string;
  imported_script_id: string;
}

export interface RoutesTable {
  id: string;
  app_id: string;
  script_id: string;
  /** any | strict | wildcard */
  host_kind: string;
  /** null for `any`; the exact host for `strict`; `*.example.com` for `wildcard`. */
  host: string | null;
  /** exact | prefix | param */
  path_kind: string;
  /** As written, except prefix routes are stored with a trailing slash (`/greet/`). */
  path: string;
  /** An HTTP method in upper case, or ANY. */
  method: string;
  /** sync | async */
  dispatch_mode: string;
  created_at: string;
}

/** Failed admin logins per username within the current window (migration 0006). */
export interface LoginFailuresTable {
  /** SHA-256 hex of the lower-cased username. */
  username_key: string;
  failures: number;
  /** Epoch milliseconds (BIGINT on PostgreSQL: read back through Number()). */
  window_start_ms: number | string;
}

export interface ControlTables {
  admins: AdminsTable;
  admin_sessions: AdminSessionsTable;
  api_keys: ApiKeysTable;
  apps: AppsTable;
  app_members: AppMembersTable;
  app_slug_history: AppSlugHistoryTable;
  app_domains: AppDomainsTable;
  scripts: ScriptsTable;
  script_imports: ScriptImportsTable;
  script_versions: ScriptVersionsTable;
  routes: RoutesTable;
  login_failures: LoginFailuresTable;
}
