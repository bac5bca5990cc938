import type { Clock } from "@app/kit/clock";
import type { Dialect, Kysely } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { PlatformDB } from "../db/schema.js";
import type { ChangeEvent, EventSink, PubsubMessage } from "../sdk/types.js";
import { matchCollection, matchOperation, matchTopic } from "../triggers/patterns.js";
import { enabledTriggersOfKind } from "../triggers/repository.js";
import { insertRealtimeMessage, isExternalTopic, notifyRealtime } from "./change-events-repo.js";
import type { OutboxWriter } from "./enqueue.js";

export type { ChangeEvent, EventSink, PubsubMessage } from "../sdk/types.js";

/** NOTIFY payloads must stay under 8000 bytes; bigger messages are fetched by seq. */
const INLINE_NOTIFY_MAX = 7000;

export interface ChangeEventsDeps {
  clock: Clock;
  dialect: Dialect;
  logger: Logger | null;
  /** PLATFORM_MAX_TRIGGER_DEPTH: a write by a run at this depth emits nothing. */
  maxDepth: number;
  outbox: OutboxWriter;
}

/**
 * Turns data writes and publishDurable messages into outbox rows for the app's matching enabled
 * triggers, inside the write's transaction (the rows commit with the data or not at all).
 */
export function createChangeEvents(deps: ChangeEventsDeps): EventSink {
  const { clock, dialect, logger, maxDepth, outbox } = deps;

  /** When a write at the maximum depth suppresses matching triggers, it is logged once for the write. */
  const depthExceeded = (appId: string, what: string, depth: number, suppressed: number): boolean => {
    if (depth < maxDepth) return false;
    if (suppressed > 0)
      logger?.warn(
        { app_id: appId, event: what, depth, max_depth: maxDepth, suppressed_triggers: suppressed },
        "trigger chain depth reached; the write emits no trigger events",
      );
    return true;
  };

  /**
   * A message on a registered external topic is logged for realtime subscribers, who receive it
   * only once this transaction commits (see realtime/hub.ts).
   */
  const logForRealtime = async (trx: Kysely<PlatformDB>, msg: PubsubMessage, now: string) => {
    if (!(await isExternalTopic(trx, msg.appId, msg.topic))) return;
    const text = JSON.stringify(msg.message ?? null);
    const seq = await insertRealtimeMessage(trx, {
      appId: msg.appId,
      topic: msg.topic,
      messageJson: text,
      now,
    });
    // PostgreSQL: NOTIFY inside the transaction is delivered at COMMIT, exactly "after the
    // durable commit". SQLite subscribers poll by seq instead.
    if (dialect.backend !== "postgres") return;
    const inline = Buffer.byteLength(text) <= INLINE_NOTIFY_MAX;
    await notifyRealtime(
      trx,
      JSON.stringify({ seq, app_id: msg.appId, topic: msg.topic, ...(inline ? { message: text } : {}) }),
    );
  };

  return {
    async change(trx, event: ChangeEvent) {
      const matching = (await enabledTriggersOfKind(trx, dialect, event.appId, event.kind)).filter(
        (t) =>
          matchCollection(t.detail.collection_pattern ?? "", event.collection) &&
          matchOperation(t.detail.operations ?? [], event.operation),
      );
      if (depthExceeded(event.appId, `${event.kind}:${event.operation}`, event.depth, matching.length))
        return 0;
      const now = clock.iso();
      for (const t of matching)
        await outbox.enqueue(trx, {
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
      return matching.length;
    },

    /** One outbox row per matching enabled pubsub trigger; no match is a silent success. */
    async pubsub(trx, msg: PubsubMessage) {
      const now = clock.iso();
      await logForRealtime(trx, msg, now);
      const matching = (await enabledTriggersOfKind(trx, dialect, msg.appId, "pubsub")).filter((t) =>
        matchTopic(t.detail.topic_pattern ?? "", msg.topic),
      );
      if (depthExceeded(msg.appId, `pubsub:${msg.topic}`, msg.depth, matching.length)) return 0;
      for (const t of matching)
        await outbox.enqueue(trx, {
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
      return matching.length;
    },
  };
}
