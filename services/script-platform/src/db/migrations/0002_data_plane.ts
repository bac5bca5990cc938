import type { Migration } from "@app/kit/db";

// The platform's data plane: kv, docs, files, secrets, topics, signing keys,
// outbox, executions, abandoned executions. Once a build containing it ships, it is never edited
// again (add a new numbered file).
//
// User data (kv values, doc bodies) and outbox payloads are JSON *text* in TEXT columns on both
// backends: PostgreSQL JSONB would reorder object keys, reject "\u0000" and lose a top-level JSON
// string through dialect.fromJson. dialect.json / dialect.fromJson still read and write them.
// app_id columns carry no foreign key so this migration does not depend on the control tables;
// deleting an app purges these rows explicitly.
export const migration: Migration = {
  version: 2,
  name: "data_plane",
  sql: `
CREATE TABLE kv_entries (
  app_id TEXT NOT NULL,
  collection TEXT NOT NULL,
  key TEXT NOT NULL,
  value TEXT NOT NULL,
  updated_at {{timestamp}} NOT NULL,
  PRIMARY KEY (app_id, collection, key)
);

CREATE TABLE docs (
  app_id TEXT NOT NULL,
  collection TEXT NOT NULL,
  id TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL,
  updated_at {{timestamp}} NOT NULL,
  PRIMARY KEY (app_id, collection, id)
);

CREATE TABLE files (
  app_id TEXT NOT NULL,
  collection TEXT NOT NULL,
  name TEXT NOT NULL,
  content_type TEXT NOT NULL,
  size {{bigint}} NOT NULL,
  sha256 TEXT NOT NULL,
  path TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL,
  updated_at {{timestamp}} NOT NULL,
  PRIMARY KEY (app_id, collection, name)
);

CREATE TABLE secrets (
  app_id TEXT NOT NULL,
  name TEXT NOT NULL,
  value_enc TEXT NOT NULL,
  updated_at {{timestamp}} NOT NULL,
  PRIMARY KEY (app_id, name)
);

CREATE TABLE topics (
  app_id TEXT NOT NULL,
  name TEXT NOT NULL,
  external {{bool}} NOT NULL DEFAULT 0,
  created_at {{timestamp}} NOT NULL,
  PRIMARY KEY (app_id, name)
);

CREATE TABLE app_signing_keys (
  app_id TEXT PRIMARY KEY,
  key_enc TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL
);

CREATE TABLE outbox (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL,
  source_kind TEXT NOT NULL,
  trigger_id TEXT,
  script_id TEXT NOT NULL,
  execution_id TEXT,
  payload TEXT NOT NULL,
  due_at {{timestamp}} NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  depth INTEGER NOT NULL DEFAULT 0,
  principal TEXT,
  reply_to TEXT,
  claimed_by TEXT,
  lease_until {{timestamp}},
  created_at {{timestamp}} NOT NULL
);
CREATE INDEX outbox_due ON outbox (due_at);

CREATE TABLE executions (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL,
  script_id TEXT NOT NULL,
  invocation_type TEXT NOT NULL,
  status TEXT NOT NULL,
  duration_ms INTEGER,
  logs TEXT NOT NULL,
  error TEXT,
  created_at {{timestamp}} NOT NULL,
  finished_at {{timestamp}}
);
CREATE INDEX executions_app ON executions (app_id, id);

CREATE TABLE abandoned_executions (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL,
  script_id TEXT NOT NULL,
  execution_id TEXT NOT NULL,
  reply_to TEXT NOT NULL,
  status TEXT NOT NULL,
  result TEXT,
  created_at {{timestamp}} NOT NULL
);
CREATE INDEX abandoned_executions_created ON abandoned_executions (created_at);
`,
};
