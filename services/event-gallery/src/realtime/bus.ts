import { randomUUID } from "node:crypto";
import type { Database } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { EventBus } from "../context.js";

type Listener = (event: string, data: Record<string, unknown>, hostsOnly: boolean) => void;

export const BUS_CHANNEL = "gallery_events";
/** PostgreSQL NOTIFY payloads must stay under 8000 bytes. */
const MAX_REMOTE_PAYLOAD = 7000;

interface Envelope {
  o: string;
  e: string;
  d: Record<string, unknown>;
  h: boolean;
}

export interface GalleryBus extends EventBus {
  /** Stop listening to other processes. */
  close(): Promise<void>;
}

/**
 * Fan-out to this process's subscribers at once, and, on PostgreSQL, to every other process of the
 * service through LISTEN/NOTIFY (messages carry an origin id so a process skips its own). On
 * SQLite one process owns the database, so local delivery is everything. Publishing never throws
 * into the caller: it happens after a commit, and a broken subscriber or a failed NOTIFY must not
 * turn a committed write into an error response.
 */
export async function createEventBus(deps: {
  logger: Logger;
  /** Without one (tests), local delivery only. */
  database?: Pick<Database<unknown>, "dialect" | "notifier">;
}): Promise<GalleryBus> {
  const { logger, database } = deps;
  const listeners = new Set<Listener>();
  const origin = randomUUID();
  const deliver: Listener = (event, data, hostsOnly) => {
    for (const fn of listeners) {
      try {
        fn(event, data, hostsOnly);
      } catch (err) {
        logger.warn({ err, event }, "event subscriber failed");
      }
    }
  };
  const remote = database?.dialect.sharedByProcesses ? database.notifier : null;
  let unlisten: (() => Promise<void>) | null = null;
  // NOTIFYs still on their way; close() waits for them so a shutdown loses no event and a bus
  // closed now cannot deliver into listeners that start after it.
  const inFlight = new Set<Promise<void>>();
  if (remote)
    unlisten = await remote.subscribe(BUS_CHANNEL, (payload) => {
      try {
        const m = JSON.parse(payload) as Envelope;
        if (m.o !== origin) deliver(m.e, m.d, m.h);
      } catch (err) {
        logger.warn({ err }, "malformed event notification");
      }
    });

  return {
    publish(event, data, opts) {
      const hostsOnly = opts?.hostsOnly ?? false;
      deliver(event, data, hostsOnly);
      if (!remote) return;
      const payload = JSON.stringify({ o: origin, e: event, d: data, h: hostsOnly } satisfies Envelope);
      if (payload.length > MAX_REMOTE_PAYLOAD) {
        logger.warn({ event }, "event too large for other processes; delivered locally only");
        return;
      }
      const sent = remote
        .publish(BUS_CHANNEL, payload)
        .catch((err) => logger.warn({ err, event }, "event notify failed"))
        .finally(() => inFlight.delete(sent));
      inFlight.add(sent);
    },
    subscribe(fn) {
      listeners.add(fn);
      return () => listeners.delete(fn);
    },
    async close() {
      await Promise.allSettled([...inFlight]);
      await unlisten?.().catch(() => {});
    },
  };
}
