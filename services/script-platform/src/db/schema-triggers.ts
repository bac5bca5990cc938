import type { Generated } from "kysely";

/**
 * Row types of the triggers tables (see migrations/0003).
 * Timestamps are ISO strings, booleans 0/1, JSON through dialect.json / dialect.fromJson.
 */
export interface TriggerTables {
  triggers: TriggersTable;
  trigger_details: TriggerDetailsTable;
  dead_letters: DeadLettersTable;
  dead_letter_handlers: DeadLetterHandlersTable;
  realtime_messages: RealtimeMessagesTable;
}

export type TriggerKind = "kv" | "docs" | "files" | "pubsub" | "cron" | "email" | "dead_letter";

export interface TriggersTable {
  id: string;
  app_id: string;
  kind: TriggerKind;
  script_id: string;
  enabled: number;
  registered_by_principal: unknown;
  retry: unknown | null;
  created_at: string;
}

export interface TriggerDetailsTable {
  trigger_id: string;
  collection_pattern: string | null;
  operations: unknown | null;
  topic_pattern: string | null;
  cron_schedule: string | null;
  cron_timezone: string | null;
  cron_next_due_at: string | null;
  cron_last_fired_at: string | null;
  email_inbound_secret_enc: string | null;
}

export type DeadLetterResolution = "replayed" | "ignored" | "handled_by_script" | "handler_failed";

export interface DeadLettersTable {
  id: string;
  app_id: string;
  trigger_id: string | null;
  script_id: string;
  source_kind: string;
  /** JSON text, exactly as the outbox row held it. */
  payload: string;
  /** JSON text of the principal the run acted as, or null. */
  principal: string | null;
  depth: number;
  error: unknown;
  attempts: number;
  execution_id: string | null;
  created_at: string;
  resolved_at: string | null;
  resolution: DeadLetterResolution | null;
}

export interface DeadLetterHandlersTable {
  outbox_id: string;
  dead_letter_id: string;
  status: "pending" | "succeeded" | "failed";
}

export interface RealtimeMessagesTable {
  seq: Generated<number>;
  app_id: string;
  topic: string;
  /** JSON text. */
  message: string;
  created_at: string;
}
