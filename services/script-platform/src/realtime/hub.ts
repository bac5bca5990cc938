import type { Clock, TimerHandle } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { unavailable } from "@app/kit/errors";
import type { Logger } from "@app/kit/logger";
import type { PlatformDB } from "../db/schema.js";
import { messagesRepo } from "./messages-repository.js";

/**
 * Fans committed publishDurable messages out to this process's SSE subscribers (best effort).
 * The pubsub event sink (dispatch/change-events.ts) logs each message on a registered external
 * topic in realtime_messages inside the publishing transaction. PostgreSQL: it also NOTIFYs, which every instance receives at commit
 * (the message inline, or by seq when too big for a NOTIFY). SQLite (one process): the hub polls
 * the log by seq, which on SQLite grows in commit order because writers are serialized.
 */
export type Sink = (seq: number, messageJson: string) => void;

/** Channel of committed realtime messages (NOTIFY on PostgreSQL, in-process on SQLite). */
export const REALTIME_CHANNEL = "platform_realtime";

export interface RealtimeHub {
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Register a sink for (app, topic); returns the unsubscribe function. 503 at the cap. */
  subscribe(appId: string, topic: string, sink: Sink): Promise<() => void>;
  readonly size: number;
}

const POLL_BATCH = 500;

export function createRealtimeHub(opts: {
  database: Database<PlatformDB>;
  clock: Clock;
  logger: Logger;
  maxSubscribers?: number;
  pollMs?: number;
}): RealtimeHub {
  const { database, clock, logger } = opts;
  const log = messagesRepo(database);
  const cap = opts.maxSubscribers ?? 10_000;
  const sinks = new Map<string, Set<Sink>>();
  let size = 0;
  let lastSeq = 0;
  let poller: TimerHandle | null = null;
  let polling = false;
  let unlisten: (() => Promise<void>) | null = null;
  const key = (appId: string, topic: string) => `${appId}\u0000${topic}`;

  function deliver(appId: string, topic: string, seq: number, messageJson: string): void {
    for (const sink of sinks.get(key(appId, topic)) ?? []) {
      try {
        sink(seq, messageJson);
      } catch (err) {
        logger.warn({ err }, "realtime delivery failed");
      }
    }
  }

  async function poll(): Promise<void> {
    if (polling || size === 0) return;
    polling = true;
    try {
      for (const r of await log.after(lastSeq, POLL_BATCH)) {
        lastSeq = Math.max(lastSeq, r.seq);
        deliver(r.app_id, r.topic, r.seq, r.message);
      }
    } catch (err) {
      logger.warn({ err }, "realtime poll failed");
    } finally {
      polling = false;
    }
  }

  async function onNotify(payload: string): Promise<void> {
    try {
      const note = JSON.parse(payload) as { seq: number; app_id: string; topic: string; message?: string };
      if (!sinks.has(key(note.app_id, note.topic))) return;
      let message = note.message;
      if (message === undefined) {
        const logged = await log.message(note.seq);
        if (logged === null) return;
        message = logged;
      }
      deliver(note.app_id, note.topic, note.seq, message);
    } catch (err) {
      logger.warn({ err }, "realtime notification dropped");
    }
  }

  return {
    get size() {
      return size;
    },
    async start() {
      if (database.dialect.sharedByProcesses) {
        unlisten ??= await database.notifier.subscribe(REALTIME_CHANNEL, (p) => void onNotify(p));
      } else {
        lastSeq = await log.maxSeq();
        poller ??= clock.setInterval(() => void poll(), opts.pollMs ?? 100);
      }
    },
    async stop() {
      poller?.cancel();
      poller = null;
      await unlisten?.();
      unlisten = null;
      sinks.clear();
      size = 0;
    },
    async subscribe(appId, topic, sink) {
      if (size >= cap)
        throw unavailable(5, "Too many realtime subscribers; try again shortly.", "subscriber_limit");
      // After an idle spell the SQLite log may hold messages older than this subscription.
      if (!database.dialect.sharedByProcesses && size === 0) lastSeq = Math.max(lastSeq, await log.maxSeq());
      const k = key(appId, topic);
      let set = sinks.get(k);
      if (!set) {
        set = new Set();
        sinks.set(k, set);
      }
      set.add(sink);
      size++;
      let done = false;
      return () => {
        if (done) return;
        done = true;
        const s = sinks.get(k);
        if (s?.delete(sink)) size--;
        if (s && s.size === 0) sinks.delete(k);
      };
    },
  };
}
