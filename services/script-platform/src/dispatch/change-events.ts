import { type Kysely, sql } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import { enqueueTriggeredRun } from "../triggers/enqueue.js";
import { matchCollection, matchOperation, matchTopic } from "../triggers/patterns.js";
import { enabledTriggersOfKind } from "../triggers/repository.js";
import { triggerRuntime } from "../triggers/runtime-config.js";

/**
 * Seam between the SDK's data writes (platform-runtime helper) and triggers (platform-triggers
 * helper, who owns this file). Called INSIDE the data write's transaction so the outbox rows
 * commit with the data or not at all. Returns how many outbox rows were written.
 */
export interface ChangeEvent {
  appId: string;
  kind: "kv" | "docs" | "files";
  collection: string;
  operation: "set" | "delete" | "create" | "update";
  /** The ctx.event.<kind> payload a triggered script sees (docs: includes prev_data; files: metadata only). */
  payload: Record<string, unknown>;
  /** Trigger chain depth of the execution that made the write (0 for HTTP). */
  depth: number;
}

export interface PubsubMessage {
  appId: string;
  topic: string;
  /** Already JSON-safe (blobs base64-encoded at any depth). */
  message: unknown;
  depth: number;
}

/** Channel of committed realtime messages (NOTIFY on PostgreSQL, in-process on SQLite). */
export const REALTIME_CHANNEL = "platform_realtime";
/** NOTIFY payloads must stay under 8000 bytes; bigger messages are fetched by seq. */
const INLINE_NOTIFY_MAX = 7000;

/**
 * A write made by a run at the maximum chain depth emits nothing; when that suppresses matching
 * triggers it is logged once for the write (not once per trigger).
 */
function depthExceeded(appId: string, what: string, depth: number, suppressed: number): boolean {
  const { settings, logger } = triggerRuntime();
  if (depth < settings.maxDepth) return false;
  if (suppressed > 0)
    logger?.warn(
      { app_id: appId, event: what, depth, max_depth: settings.maxDepth, suppressed_triggers: suppressed },
      "trigger chain depth reached; the write emits no trigger events",
    );
  return true;
}

export async function emitChangeEvent(trx: Kysely<PlatformDB>, event: ChangeEvent): Promise<number> {
  const { dialect, clock } = triggerRuntime();
  const matching = (await enabledTriggersOfKind(trx, dialect, event.appId, event.kind)).filter(
    (t) =>
      matchCollection(t.detail.collection_pattern ?? "", event.collection) &&
      matchOperation(t.detail.operations ?? [], event.operation),
  );
  if (depthExceeded(event.appId, `${event.kind}:${event.operation}`, event.depth, matching.length)) return 0;
  const now = clock.iso();
  let written = 0;
  for (const t of matching) {
    await enqueueTriggeredRun(trx, dialect, {
      appId: event.appId,
      sourceKind: event.kind,
      triggerId: t.id,
      scriptId: t.script_id,
      event: { [event.kind]: event.payload },
      depth: event.depth + 1,
      principal: t.registered_by_principal,
      dueAt: now,
      now,
    });
    written++;
  }
  return written;
}

/**
 * One outbox row per matching enabled pubsub trigger; no match is a silent success. A message on
 * a registered external topic is also logged for realtime subscribers, who receive it only once
 * this transaction commits (see realtime/hub.ts).
 */
export async function emitPubsub(trx: Kysely<PlatformDB>, msg: PubsubMessage): Promise<number> {
  const { dialect, clock } = triggerRuntime();
  const now = clock.iso();
  await logForRealtime(trx, msg, now);
  const matching = (await enabledTriggersOfKind(trx, dialect, msg.appId, "pubsub")).filter((t) =>
    matchTopic(t.detail.topic_pattern ?? "", msg.topic),
  );
  if (depthExceeded(msg.appId, `pubsub:${msg.topic}`, msg.depth, matching.length)) return 0;
  let written = 0;
  for (const t of matching) {
    await enqueueTriggeredRun(trx, dialect, {
      appId: msg.appId,
      sourceKind: "pubsub",
      triggerId: t.id,
      scriptId: t.script_id,
      event: { pubsub: { topic: msg.topic, message: msg.message, published_at: now } },
      depth: msg.depth + 1,
      principal: t.registered_by_principal,
      dueAt: now,
      now,
    });
    written++;
  }
  return written;
}

async function logForRealtime(trx: Kysely<PlatformDB>, msg: PubsubMessage, now: string): Promise<void> {
  const topic = await trx
    .selectFrom("topics")
    .select("external")
    .where("app_id", "=", msg.appId)
    .where("name", "=", msg.topic)
    .executeTakeFirst();
  if (!topic || Number(topic.external) !== 1) return;
  const text = JSON.stringify(msg.message ?? null);
  const row = await trx
    .insertInto("realtime_messages")
    .values({ app_id: msg.appId, topic: msg.topic, message: text, created_at: now })
    .returning("seq")
    .executeTakeFirstOrThrow();
  if (triggerRuntime().dialect.backend === "postgres") {
    // NOTIFY inside the transaction is delivered to every listening process at COMMIT, and never
    // if it rolls back: exactly "after the durable commit". SQLite subscribers poll by seq instead.
    const inline = Buffer.byteLength(text) <= INLINE_NOTIFY_MAX;
    const note = JSON.stringify({
      seq: Number(row.seq),
      app_id: msg.appId,
      topic: msg.topic,
      ...(inline ? { message: text } : {}),
    });
    await sql`SELECT pg_notify(${REALTIME_CHANNEL}, ${note})`.execute(trx);
  }
}
