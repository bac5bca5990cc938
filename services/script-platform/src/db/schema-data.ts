import type { ColumnType } from "@app/kit/db";

/**
 * Row types of the data tables (see migrations/0002).
 * Timestamps are ISO strings, booleans 0/1. JSON lives in TEXT columns: write with
 * dialect.json(v), read with dialect.fromJson(v).
 */
type WithDefault<T> = ColumnType<T, T | undefined, T>;

export interface KvEntriesTable {
  app_id: string;
  collection: string;
  key: string;
  /** JSON text. */
  value: string;
  updated_at: string;
}

export interface DocsTable {
  app_id: string;
  collection: string;
  id: string;
  /** JSON text of an object. */
  body: string;
  created_at: string;
  updated_at: string;
}

export interface FilesTable {
  app_id: string;
  collection: string;
  name: string;
  content_type: string;
  size: number;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
  /** Path of the blob relative to PLATFORM_FILES_ROOT. */
  path: string;
  created_at: string;
  updated_at: string;
}

export interface SecretsTable {
  app_id: string;
  name: string;
  /** secretBox ciphertext of the JSON text of the value. */
  value_enc: string;
  updated_at: string;
}

export interface TopicsTable {
  app_id: string;
  name: string;
  /** 0/1: subscribable from outside (realtime) or internal. */
  external: WithDefault<number>;
  created_at: string;
}

export interface AppSigningKeysTable {
  app_id: string;
  /** secretBox ciphertext of the base64 HMAC key. */
  key_enc: string;
  created_at: string;
}

export type OutboxSourceKind = "http" | "kv" | "docs" | "files" | "pubsub" | "cron" | "email" | "dead_letter";

export interface OutboxTable {
  id: string;
  app_id: string;
  source_kind: OutboxSourceKind | string;
  trigger_id: string | null;
  script_id: string;
  /** Known up front for HTTP dispatch (the 202 names it); null lets the dispatcher mint one. */
  execution_id: WithDefault<string | null>;
  /** JSON text: for http `{request, request_id}`; for events `{event: {<kind>: ...}}`. */
  payload: string;
  due_at: string;
  attempts: WithDefault<number>;
  depth: WithDefault<number>;
  /** JSON text of the principal the run acts as, or null (public HTTP). */
  principal: string | null;
  /** In-process inbox id of a waiting sync request: present means "do not retry". */
  reply_to: string | null;
  claimed_by: WithDefault<string | null>;
  lease_until: WithDefault<string | null>;
  created_at: string;
}

export interface ExecutionsTable {
  id: string;
  app_id: string;
  script_id: string;
  invocation_type: string;
  /** running, succeeded, failed */
  status: string;
  duration_ms: number | null;
  /** JSON text: [{level, message, at}] */
  logs: string;
  /** JSON text: {code, message} or null (older rows: {kind, message}) */
  error: string | null;
  created_at: string;
  finished_at: string | null;
  /** Migration 0005: the structured error's parts (null when the run succeeded) and the running instance. */
  error_code: WithDefault<string | null>;
  error_stack: WithDefault<string | null>;
  error_line: WithDefault<number | null>;
  error_column: WithDefault<number | null>;
  instance_id: WithDefault<string | null>;
}

export interface AbandonedExecutionsTable {
  id: string;
  app_id: string;
  script_id: string;
  execution_id: string;
  reply_to: string;
  status: string;
  /** JSON text of the result or error the dropped caller never received. */
  result: string | null;
  created_at: string;
}

export interface DataTables {
  kv_entries: KvEntriesTable;
  docs: DocsTable;
  files: FilesTable;
  secrets: SecretsTable;
  topics: TopicsTable;
  app_signing_keys: AppSigningKeysTable;
  outbox: OutboxTable;
  executions: ExecutionsTable;
  abandoned_executions: AbandonedExecutionsTable;
}
