import type { Migration } from "@app/kit/db";

// Owned by: platform triggers: triggers (parent + per-kind detail), dead letters, cron state,
// the realtime fan-out log. Once a build containing it ships, it is never edited again.
//
// Not foreign-keyed to apps/scripts (0001) or the outbox (0002): triggers outlive nothing but are
// removed through the control plane's deletes, and a dead letter must survive the deletion of
// the trigger or script that produced it (it is forensic data). Payloads copied from or into the
// outbox stay JSON *text* like the outbox's own (0002): JSONB would reorder keys.
export const migration: Migration = {
  version: 3,
  name: "triggers",
  sql: `
CREATE TABLE triggers (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('kv', 'docs', 'files', 'pubsub', 'cron', 'email', 'dead_letter')),
  script_id TEXT NOT NULL,
  enabled {{bool}} NOT NULL DEFAULT 1,
  registered_by_principal {{json}} NOT NULL,
  retry {{json}},
  created_at {{timestamp}} NOT NULL
);
CREATE INDEX triggers_by_app_kind ON triggers (app_id, kind);
CREATE INDEX triggers_by_script ON triggers (script_id);

CREATE TABLE trigger_details (
  trigger_id TEXT PRIMARY KEY REFERENCES triggers (id) ON DELETE CASCADE,
  collection_pattern TEXT,
  operations {{json}},
  topic_pattern TEXT,
  cron_schedule TEXT,
  cron_timezone TEXT,
  cron_next_due_at {{timestamp}},
  cron_last_fired_at {{timestamp}},
  email_inbound_secret_enc TEXT
);
CREATE INDEX trigger_details_cron_due ON trigger_details (cron_next_due_at) WHERE cron_next_due_at IS NOT NULL;

CREATE TABLE dead_letters (
  id TEXT PRIMARY KEY,
  app_id TEXT NOT NULL,
  trigger_id TEXT,
  script_id TEXT NOT NULL,
  source_kind TEXT NOT NULL,
  payload TEXT NOT NULL,
  principal TEXT,
  depth INTEGER NOT NULL DEFAULT 0,
  error {{json}} NOT NULL,
  attempts INTEGER NOT NULL,
  execution_id TEXT,
  created_at {{timestamp}} NOT NULL,
  resolved_at {{timestamp}},
  resolution TEXT CHECK (resolution IN ('replayed', 'ignored', 'handled_by_script', 'handler_failed'))
);
CREATE INDEX dead_letters_by_app ON dead_letters (app_id, created_at);
CREATE INDEX dead_letters_resolved ON dead_letters (resolved_at) WHERE resolved_at IS NOT NULL;

-- One row per dead_letter-trigger run enqueued for a dead letter; settles its resolution.
CREATE TABLE dead_letter_handlers (
  outbox_id TEXT PRIMARY KEY,
  dead_letter_id TEXT NOT NULL REFERENCES dead_letters (id) ON DELETE CASCADE,
  status TEXT NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed'))
);
CREATE INDEX dead_letter_handlers_by_dl ON dead_letter_handlers (dead_letter_id);

-- Messages published with publishDurable, written in the publishing transaction so subscribers
-- only ever see committed messages; pruned by the retention job.
CREATE TABLE realtime_messages (
  seq {{autoid}},
  app_id TEXT NOT NULL,
  topic TEXT NOT NULL,
  message TEXT NOT NULL,
  created_at {{timestamp}} NOT NULL
);
`,
};
