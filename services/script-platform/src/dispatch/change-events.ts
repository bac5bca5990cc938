import type { Clock } from "@app/kit/clock";
import type { Database, Kysely } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { PlatformDB } from "../db/schema.js";
import type { TriggerKind } from "../db/schema-triggers.js";
import type { ChangeEvent, EventSink, PubsubMessage } from "../sdk/types.js";
import { matchCollection, matchOperation, matchTopic } from "../triggers/patterns.js";
import { enabledTriggersOfKind } from "../triggers/repository.js";
import { insertRealtimeMessage, isExternalTopic, notifyRealtime } from "./change-events-repo.js";
import type { OutboxWriter, TriggeredRun } from "./enqueue.js";
import { GroupCommit, type GroupCommitOptions } from "./group-commit.js";

export type { ChangeEvent, EventSink, PubsubMessage } from "../sdk/types.js";

/** One publishDurable in a publish batch; `enqueued` is filled in when the batch runs. */
interface PublishSlot {
  msg: PubsubMessage;
  enqueued: number;
}

/** NOTIFY payloads must stay under 8000 bytes; bigger messages are fetched by seq. */
const INLINE_NOTIFY_MAX = 7000;

export interface ChangeEventsDeps {
  clock: Clock;
  database: Database<PlatformDB>;
  logger: Logger | null;
  /** PLATFORM_MAX_TRIGGER_DEPTH: a write by a run at this depth emits nothing. */
  maxDepth: number;
  outbox: OutboxWriter;
  /** How concurrent publishDurable calls share transactions (tests observe or shape it). */
  publishCommit?: GroupCommitOptions;
}

/**
 * Turns data writes and publishDurable messages into outbox rows for the app's matching enabled
 * triggers, inside the write's transaction (the rows commit with the data or not at all).
 */
export function createChangeEvents(deps: ChangeEventsDeps): EventSink {
  const { clock, database, logger, maxDepth, outbox } = deps;
  const dialect = database.dialect;
  // Concurrent publishDurable calls share a transaction (one BEGIN/COMMIT, one trigger lookup,
  // one NOTIFY); when a batch fails, each publish is retried alone, so none is lost or doubled.
  const publishes = new GroupCommit(database, deps.publishCommit);

  /**
   * Lookups made once per transaction: every event of a write (or of a publish batch) sees the
   * triggers and topics as that transaction reads them. Nothing outlives the transaction, so a
   * trigger changed or disabled in any process applies to the next transaction at once.
   */
  const perTrx = new WeakMap<Kysely<PlatformDB>, Map<string, Promise<unknown>>>();
  const once = <T>(trx: Kysely<PlatformDB>, key: string, read: () => Promise<T>): Promise<T> => {
    let m = perTrx.get(trx);
    if (!m) {
      m = new Map();
      perTrx.set(trx, m);
    }
    let p = m.get(key) as Promise<T> | undefined;
    if (!p) {
      p = read();
      m.set(key, p);
    }
    return p;
  };
  const enabledOfKind = (trx: Kysely<PlatformDB>, appId: string, kind: TriggerKind) =>
    once(trx, `t\0${appId}\0${kind}`, () => enabledTriggersOfKind(trx, dialect, appId, kind));

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
    const external = await once(trx, `x\0${msg.appId}\0${msg.topic}`, () =>
      isExternalTopic(trx, msg.appId, msg.topic),
    );
    if (!external) return;
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

  /**
   * The outbox rows of several messages in one transaction: one multi-row insert and one
   * announcement for all of them. Returns how many rows each message wrote.
   */
  const pubsubMany = async (trx: Kysely<PlatformDB>, msgs: readonly PubsubMessage[]): Promise<number[]> => {
    const now = clock.iso();
    const runs: TriggeredRun[] = [];
    const counts: number[] = [];
    for (const msg of msgs) {
      await logForRealtime(trx, msg, now);
      const matching = (await enabledOfKind(trx, msg.appId, "pubsub")).filter((t) =>
        matchTopic(t.detail.topic_pattern ?? "", msg.topic),
      );
      if (depthExceeded(msg.appId, `pubsub:${msg.topic}`, msg.depth, matching.length)) {
        counts.push(0);
        continue;
      }
      for (const t of matching)
        runs.push({
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
      counts.push(matching.length);
    }
    await outbox.enqueueMany(trx, runs);
    return counts;
  };
  /** A publish batch of the group commit (called again with one slot when its batch failed). */
  const publishAll = async (trx: Kysely<PlatformDB>, slots: PublishSlot[]): Promise<void> => {
    const counts = await pubsubMany(
      trx,
      slots.map((s) => s.msg),
    );
    for (const [i, s] of slots.entries()) s.enqueued = counts[i] ?? 0;
  };

  const sink: EventSink = {
    async change(trx, event: ChangeEvent) {
      const matching = (await enabledOfKind(trx, event.appId, event.kind)).filter(
        (t) =>
          matchCollection(t.detail.collection_pattern ?? "", event.collection) &&
          matchOperation(t.detail.operations ?? [], event.operation),
      );
      if (depthExceeded(event.appId, `${event.kind}:${event.operation}`, event.depth, matching.length))
        return 0;
      const now = clock.iso();
      await outbox.enqueueMany(
        trx,
        matching.map((t) => ({
          appId: event.appId,
          sourceKind: event.kind,
          triggerId: t.id,
          scriptId: t.script_id,
          event: { [event.kind]: event.payload },
          depth: event.depth + 1,
          principal: t.registered_by_principal,
          dueAt: now,
          now,
        })),
      );
      return matching.length;
    },

    /** One outbox row per matching enabled pubsub trigger; no match is a silent success. */
    async pubsub(trx, msg: PubsubMessage) {
      return (await pubsubMany(trx, [msg]))[0] ?? 0;
    },

    async publish(msg: PubsubMessage) {
      const slot: PublishSlot = { msg, enqueued: 0 };
      await publishes.write({ kind: "events.publish", data: slot, apply: publishAll });
      return slot.enqueued;
    },
  };
  return sink;
}
