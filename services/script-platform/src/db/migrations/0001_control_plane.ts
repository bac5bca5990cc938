import type { Migration } from "@app/kit/db";

/** Fixed ids of the rows this migration seeds (a fresh install is exactly one that runs it). */
export const DEFAULT_APP_ID = "019a0000-0000-7000-8000-000000000001";
export const HELLO_SCRIPT_ID = "019a0000-0000-7000-8000-000000000002";
export const HELLO_ROUTE_ID = "019a0000-0000-7000-8000-000000000003";

const SEEDED_AT = "2026-01-01T00:00:00.000Z";

const HELLO_SOURCE = `// The hello-world endpoint every fresh install starts with (GET /hello).
export default function (ctx) {
  return { statusCode: 200, body: { message: "Hello, world!", sdk_version: ctx.sdk_version } };
}
`;

const q = (s: string) => `'${s.replace(/'/g, "''")}'`;

// Owned by the platform control plane: admins, sessions, api keys, apps, domains, scripts, routes.
// Shipped: never edit; add a new numbered file.
export const migration: Migration = {
  version: 1,
  name: "control_plane",
  sql: `
CREATE TABLE admins (
  id TEXT PRIMARY KEY,
  username TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  instance_role TEXT NOT NULL,
  is_active {{bool}} NOT NULL DEFAULT 1,
  email TEXT,
  mfa_secret TEXT,
  created_at {{timestamp}} NOT NULL,
  updated_at {{timestamp}} NOT NULL,
  last_login_at {{timestamp}}
);

CREATE TABLE admin_sessions (
  id TEXT PRIMARY KEY,
  admin_id TEXT NOT NULL REFERENCES admins(id) ON DELETE CASCADE,
  token_hash TEXT NOT NULL UNIQUE,
  created_at {{timestamp}} NOT NULL,
  last_used_at {{timestamp}} NOT NULL,
  expires_at {{timestamp}} NOT NULL
);
CREATE INDEX admin_sessions_admin ON admin_sessions (admin_id, created_at);

CREATE TABLE apps (
  id TEXT PRIMARY KEY,
  slug TEXT NOT NULL UNIQUE,
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  created_at {{timestamp}} NOT NULL,
  updated_at {{timestamp}} NOT NULL
);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  admin_id TEXT NOT NULL REFERENCES admins(id) ON DELETE CASCADE,
  app_id TEXT REFERENCES apps(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  prefix TEXT NOT NULL,
  secret_hash TEXT NOT NULL UNIQUE,
  scopes {{json}} NOT NULL,
  created_at {{timestamp}} NOT NULL,
  last_used_at {{timestamp}},
  expires_at {{timestamp}}
);
CREATE INDEX api_keys_admin ON api_keys (admin_id);

CREATE TABLE app_members (
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  admin_id TEXT NOT NULL REFERENCES admins(id) ON DELETE CASCADE,
  role TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL,
  PRIMARY KEY (app_id, admin_id)
);
CREATE INDEX app_members_admin ON app_members (admin_id);

CREATE TABLE app_slug_history (
  slug TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  retired_at {{timestamp}} NOT NULL
);
CREATE INDEX app_slug_history_app ON app_slug_history (app_id);

CREATE TABLE app_domains (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  host TEXT NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL
);
CREATE INDEX app_domains_app ON app_domains (app_id);

CREATE TABLE scripts (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  kind TEXT NOT NULL,
  source TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  timeout_seconds INTEGER NOT NULL DEFAULT 30,
  sandbox {{json}} NOT NULL,
  memory_limit_mb INTEGER,
  created_at {{timestamp}} NOT NULL,
  updated_at {{timestamp}} NOT NULL,
  UNIQUE (app_id, name)
);

CREATE TABLE script_imports (
  script_id TEXT NOT NULL REFERENCES scripts(id) ON DELETE CASCADE,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  imported_name TEXT NOT NULL,
  imported_script_id TEXT NOT NULL REFERENCES scripts(id) ON DELETE CASCADE,
  PRIMARY KEY (script_id, imported_name)
);
CREATE INDEX script_imports_target ON script_imports (imported_script_id);

CREATE TABLE routes (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
  script_id TEXT NOT NULL REFERENCES scripts(id) ON DELETE CASCADE,
  host_kind TEXT NOT NULL,
  host TEXT,
  path_kind TEXT NOT NULL,
  path TEXT NOT NULL,
  method TEXT NOT NULL,
  dispatch_mode TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL
);
CREATE INDEX routes_app ON routes (app_id);
CREATE INDEX routes_script ON routes (script_id);

INSERT INTO apps (id, slug, name, description, created_at, updated_at)
VALUES (${q(DEFAULT_APP_ID)}, 'default', 'Default', 'The app every install starts with.', '${SEEDED_AT}', '${SEEDED_AT}');

INSERT INTO app_domains (id, app_id, host, kind, created_at) VALUES
  ('019a0000-0000-7000-8000-000000000011', ${q(DEFAULT_APP_ID)}, 'localhost', 'exact', '${SEEDED_AT}'),
  ('019a0000-0000-7000-8000-000000000012', ${q(DEFAULT_APP_ID)}, '127.0.0.1', 'exact', '${SEEDED_AT}'),
  ('019a0000-0000-7000-8000-000000000013', ${q(DEFAULT_APP_ID)}, '::1', 'exact', '${SEEDED_AT}');

INSERT INTO scripts (id, app_id, name, kind, source, description, timeout_seconds, sandbox, memory_limit_mb, created_at, updated_at)
VALUES (${q(HELLO_SCRIPT_ID)}, ${q(DEFAULT_APP_ID)}, 'hello', 'endpoint', ${q(HELLO_SOURCE)},
  'Hello-world endpoint created on a fresh install.', 30, '{}', NULL, '${SEEDED_AT}', '${SEEDED_AT}');

INSERT INTO routes (id, app_id, script_id, host_kind, host, path_kind, path, method, dispatch_mode, created_at)
VALUES (${q(HELLO_ROUTE_ID)}, ${q(DEFAULT_APP_ID)}, ${q(HELLO_SCRIPT_ID)}, 'any', NULL, 'exact', '/hello', 'GET', 'sync', '${SEEDED_AT}');
`,
};
