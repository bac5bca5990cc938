import { z } from "zod";
import type { TriggerKind } from "../db/schema-triggers.js";
import type { RetryPolicy } from "./settings.js";

export const TRIGGER_KINDS: readonly TriggerKind[] = [
  "kv",
  "docs",
  "files",
  "pubsub",
  "cron",
  "email",
  "dead_letter",
];

export const OPERATIONS = {
  kv: ["set", "delete"],
  docs: ["create", "update", "delete"],
  files: ["create", "update", "delete"],
} as const;

const retrySchema = z.strictObject({
  max_attempts: z.number().int().min(1).max(100).optional(),
  backoff_ms: z.number().int().min(0).max(86_400_000).optional(),
  max_backoff_ms: z.number().int().min(0).max(86_400_000).optional(),
});

const base = {
  script_id: z.string().min(1).max(100),
  enabled: z.boolean().optional(),
  retry: retrySchema.optional(),
};

const collectionKind = (ops: readonly [string, ...string[]]) =>
  z.strictObject({
    ...base,
    collection: z.string(),
    operations: z.array(z.enum(ops)).max(ops.length).optional(),
  });

/** Request bodies of POST /admin/apps/{id}/triggers/{kind} (the script-platform contract). */
export const createBodies = {
  kv: collectionKind(OPERATIONS.kv),
  docs: collectionKind(OPERATIONS.docs),
  files: collectionKind(OPERATIONS.files),
  pubsub: z.strictObject({ ...base, topic: z.string() }),
  cron: z.strictObject({
    ...base,
    schedule: z.string().max(200),
    timezone: z.string().max(100).default("UTC"),
  }),
  email: z.strictObject({ ...base, inbound_secret: z.string().min(1).max(1024).optional() }),
  dead_letter: z.strictObject(base),
} satisfies Record<TriggerKind, z.ZodType>;

export type CreateBody<K extends TriggerKind> = z.output<(typeof createBodies)[K]>;
export type AnyCreateBody = CreateBody<TriggerKind>;

export const patchBody = z.strictObject({ enabled: z.boolean() });

/** Per-kind detail as stored (trigger_details) and shown. */
export interface TriggerDetail {
  collection_pattern: string | null;
  operations: string[] | null;
  topic_pattern: string | null;
  cron_schedule: string | null;
  cron_timezone: string | null;
  cron_next_due_at: string | null;
  cron_last_fired_at: string | null;
  email_inbound_secret_enc: string | null;
}

export interface Trigger {
  id: string;
  app_id: string;
  kind: TriggerKind;
  script_id: string;
  enabled: boolean;
  registered_by_principal: unknown;
  /** As given at creation (null: platform defaults apply). */
  retry: Partial<RetryPolicy> | null;
  created_at: string;
  detail: TriggerDetail;
}

/** The API shape of a trigger: never the inbound secret, only whether one is set. */
export function presentTrigger(t: Trigger, defaults: RetryPolicy): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: t.id,
    app_id: t.app_id,
    kind: t.kind,
    script_id: t.script_id,
    enabled: t.enabled,
    retry: effectiveRetry(t.retry, defaults),
    registered_by_principal: t.registered_by_principal,
    created_at: t.created_at,
  };
  const d = t.detail;
  switch (t.kind) {
    case "kv":
    case "docs":
    case "files":
      out.collection = d.collection_pattern;
      out.operations = d.operations ?? [];
      break;
    case "pubsub":
      out.topic = d.topic_pattern;
      break;
    case "cron":
      out.schedule = d.cron_schedule;
      out.timezone = d.cron_timezone;
      out.next_due_at = d.cron_next_due_at;
      out.last_fired_at = d.cron_last_fired_at;
      break;
    case "email":
      out.has_inbound_secret = d.email_inbound_secret_enc !== null;
      break;
    case "dead_letter":
      break;
  }
  return out;
}

export function effectiveRetry(given: Partial<RetryPolicy> | null, defaults: RetryPolicy): RetryPolicy {
  const backoff = given?.backoff_ms ?? defaults.backoff_ms;
  return {
    max_attempts: given?.max_attempts ?? defaults.max_attempts,
    backoff_ms: backoff,
    max_backoff_ms: Math.max(backoff, given?.max_backoff_ms ?? defaults.max_backoff_ms),
  };
}
