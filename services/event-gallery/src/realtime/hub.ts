import type { Kysely } from "@app/kit/db";
import { unavailable } from "@app/kit/errors";
import type { SseStream } from "@app/kit/http";
import type { EventBus, GalleryContext } from "../context.js";
import type { GalleryDB } from "../db/schema.js";
import { hostIdsAmong } from "./repository.js";

interface Subscriber {
  userId: string;
  stream: SseStream;
}

/** What the hub needs: the logger, the bus it listens to, the database for host checks. */
export type StreamHubDeps = Pick<GalleryContext, "logger"> & {
  bus: EventBus;
  database: { db: Kysely<GalleryDB> };
  /** Open streams at most (default 2000). */
  maxStreams?: number;
};

export type StreamHub = ReturnType<typeof createStreamHub>;

/**
 * Fans bus events out to open SSE streams. Host-only events go to users whose live row is host or
 * admin at the moment of the event (a demoted host stops receiving them at once).
 */
export function createStreamHub(deps: StreamHubDeps) {
  const maxStreams = deps.maxStreams ?? 2000;
  const subs = new Set<Subscriber>();

  const sendToHosts = async (event: string, data: Record<string, unknown>): Promise<void> => {
    const targets = [...subs];
    const ids = [...new Set(targets.map((s) => s.userId))];
    if (ids.length === 0) return;
    const hosts = await hostIdsAmong(deps.database.db, ids);
    for (const s of targets) if (hosts.has(s.userId)) s.stream.send(event, data);
  };

  const unsubscribe = deps.bus.subscribe((event, data, hostsOnly) => {
    if (!hostsOnly) {
      for (const s of subs) s.stream.send(event, data);
      return;
    }
    sendToHosts(event, data).catch((err) => deps.logger.warn({ err, event }, "host event delivery failed"));
  });

  return {
    /** Refuse before the stream opens when the server is at its stream bound. */
    assertCapacity(): void {
      if (subs.size >= maxStreams) throw unavailable(5, "Too many live connections; try again shortly.");
    },

    add(userId: string, stream: SseStream): void {
      const sub = { userId, stream };
      subs.add(sub);
      stream.onClose(() => subs.delete(sub));
    },

    size(): number {
      return subs.size;
    },

    /**
     * End every open stream and stop listening. Called from the root preClose hook: kit's own
     * shutdown sweep only sees streams opened on the root instance, not in the /api/v1 plugin.
     */
    close(): void {
      unsubscribe();
      for (const s of [...subs]) s.stream.close();
    },
  };
}
