import type { Clock } from "@app/kit/clock";
import type { Database, Kysely } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { PlatformDB } from "../db/schema.js";
import type { TriggerKind } from "../db/schema-triggers.js";
import type { ChangeEvent, EventSink, PubsubMessage } from "../sdk/types.js";
import { matchCollection, matchOperation, matchTopic } from "../triggers/patterns.js";
import { enabledTriggersOfKind } from "../triggers/repository.js";
import {
  insertRealtimeMessage,
  isExternalTopic,
  notifyRealtime,
  type PubsubTriggerRow,
  pubsubLookup,
  scriptsByIds,
} from "./change-events-repository.js";
import type { OutboxWriter, OwnRuns, TriggeredRun } from "./enqueue.js";
import { createGroupCommit, type GroupCommitOptions } from "./group-commit.js";

export type { ChangeEvent, EventSink, PubsubMessage } from "../sdk/types.js";

/** One publishDurable in a publish batch; `enqueued` is filled in when the batch runs. */
interface PublishSlot {
  msg: PubsubMessage;
  enqueued: number;
  /** Runs its batch wrote claimed by this process: started once the batch committed. */
  own: OwnRuns | null;
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
  const publishes = createGroupCommit({ ...deps.publishCommit, database });

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
    const text = JSON.stringify(msg.message ?? null);
    const seq = await insertRealtimeMessage(trx, {
      appId: msg.appId,
      topic: msg.topic,
      messageJson: text,
      now,
    });
    // PostgreSQL: NOTIFY inside the transaction is delivered at COMMIT, exactly "after the
    // durable commit". SQLite subscribers poll by seq instead.
    if (!dialect.sharedByProcesses) return;
    const inline = Buffer.byteLength(text) <= INLINE_NOTIFY_MAX;
    await notifyRealtime(
      trx,
      JSON.stringify({ seq, app_id: msg.appId, topic: msg.topic, ...(inline ? { message: text } : {}) }),
    );
  };

  /** What a batch of messages needs to know: each app's enabled pubsub triggers, external topics. */
  interface Lookup {
    triggers(appId: string): Promise<PubsubTriggerRow[]>;
    external(appId: string, topic: string): Promise<boolean>;
  }
  /** The lookups as reads of `trx`, each made once per transaction. */
  const lookupIn = (trx: Kysely<PlatformDB>): Lookup => ({
    triggers: async (appId) =>
      (await enabledOfKind(trx, appId, "pubsub")).map((t) => ({
        id: t.id,
        app_id: t.app_id,
        script_id: t.script_id,
        principal_json: dialect.json(t.registered_by_principal),
        topic_pattern: t.detail.topic_pattern ?? "",
      })),
    external: (appId, topic) => once(trx, `x\0${appId}\0${topic}`, () => isExternalTopic(trx, appId, topic)),
  });
  /** PostgreSQL: both lookups of a whole batch in one statement. */
  const lookupAll = async (db: Kysely<PlatformDB>, msgs: readonly PubsubMessage[]): Promise<Lookup> => {
    const found = await pubsubLookup(
      db,
      dialect,
      [...new Set(msgs.map((m) => m.appId))],
      [...new Set(msgs.map((m) => m.topic))],
    );
    return {
      triggers: async (appId) => found.triggers.filter((t) => t.app_id === appId),
      external: async (appId, topic) => found.external.has(`${appId}\0${topic}`),
    };
  };

  /** The runs of several messages and the messages to log for realtime; how many runs each wrote. */
  const plan = async (lookup: Lookup, msgs: readonly PubsubMessage[], now: string) => {
    const runs: TriggeredRun[] = [];
    const counts: number[] = [];
    const realtime: PubsubMessage[] = [];
    for (const msg of msgs) {
      if (await lookup.external(msg.appId, msg.topic)) realtime.push(msg);
      const matching = (await lookup.triggers(msg.appId)).filter((t) =>
        matchTopic(t.topic_pattern, msg.topic),
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
          principal: null,
          principalJson: t.principal_json,
          ...(t.script ? { script: t.script } : {}),
          dueAt: now,
          now,
        });
      counts.push(matching.length);
    }
    return { runs, counts, realtime };
  };
  const write = async (trx: Kysely<PlatformDB>, p: Awaited<ReturnType<typeof plan>>, now: string) => {
    for (const msg of p.realtime) await logForRealtime(trx, msg, now);
    await outbox.enqueueMany(trx, p.runs);
  };
  /** A publish batch's write: its runs this process has slots for are written claimed by it. */
  const writeOwn = async (
    trx: Kysely<PlatformDB>,
    p: Awaited<ReturnType<typeof plan>>,
    now: string,
    slots: PublishSlot[],
  ) => {
    for (const msg of p.realtime) await logForRealtime(trx, msg, now);
    // Each slot holds the batch's own runs from before their write: whatever fails after it (a
    // later statement, the COMMIT), its retry or its caller drops them.
    await outbox.enqueueOwn(
      trx,
      p.runs,
      (ids) => scriptsByIds(trx, dialect, ids),
      (own) => {
        for (const s of slots) s.own = own;
      },
    );
  };

  /**
   * A publish batch of the group commit (called again with one slot when its batch failed). On
   * PostgreSQL the batch comes without a transaction (its write is `oneStatement`): one statement
   * reads the triggers and topics, and when nothing goes to the realtime log the outbox rows and
   * their NOTIFY are the one write (2 round trips instead of BEGIN, 2 reads, write, COMMIT).
   * Reading outside the write's transaction sees what READ COMMITTED would show inside it: each
   * statement its own snapshot. Anything more (realtime rows, > 500 rows) gets a transaction.
   */
  const publishAll = async (trx: Kysely<PlatformDB>, slots: PublishSlot[]): Promise<void> => {
    // A retry after its batch failed: that batch's own runs were never committed.
    for (const s of slots) {
      s.own?.drop();
      s.own = null;
    }
    const msgs = slots.map((s) => s.msg);
    const now = clock.iso();
    const alone = !dialect.inTransaction(trx);
    const p = await plan(alone ? await lookupAll(trx, msgs) : lookupIn(trx), msgs, now);
    if (!alone || (p.realtime.length === 0 && p.runs.length <= 500)) await writeOwn(trx, p, now, slots);
    else await database.writeTx((t) => writeOwn(t, p, now, slots));
    for (const [i, s] of slots.entries()) s.enqueued = p.counts[i] ?? 0;
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
      const now = clock.iso();
      const p = await plan(lookupIn(trx), [msg], now);
      await write(trx, p, now);
      return p.counts[0] ?? 0;
    },

    async publish(msg: PubsubMessage) {
      const slot: PublishSlot = { msg, enqueued: 0, own: null };
      try {
        await publishes.write({ kind: "events.publish", data: slot, apply: publishAll, oneStatement: true });
      } catch (err) {
        slot.own?.drop();
        throw err;
      }
      // Committed: the batch's own runs start now (the first of its publishes to get here starts them).
      slot.own?.start();
      return slot.enqueued;
    },
  };
  return sink;
}
