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

/**
 * Fans bus events out to open SSE streams. Host-only events go to users whose live row is host or
 * admin at the moment of the event (a demoted host stops receiving them at once).
 */
export class StreamHub {
  private readonly subs = new Set<Subscriber>();
  private readonly unsubscribe: () => void;

  constructor(
    private readonly ctx: Pick<GalleryContext, "logger"> & {
      bus: EventBus;
      database: { db: Kysely<GalleryDB> };
    },
    private readonly maxStreams = 2000,
  ) {
    this.unsubscribe = ctx.bus.subscribe((event, data, hostsOnly) => {
      if (!hostsOnly) {
        for (const s of this.subs) s.stream.send(event, data);
        return;
      }
      this.sendToHosts(event, data).catch((err) =>
        ctx.logger.warn({ err, event }, "host event delivery failed"),
      );
    });
  }

  /** Refuse before the stream opens when the server is at its stream bound. */
  assertCapacity(): void {
    if (this.subs.size >= this.maxStreams)
      throw unavailable(5, "Too many live connections; try again shortly.");
  }

  add(userId: string, stream: SseStream): void {
    const sub = { userId, stream };
    this.subs.add(sub);
    stream.onClose(() => this.subs.delete(sub));
  }

  size(): number {
    return this.subs.size;
  }

  private async sendToHosts(event: string, data: Record<string, unknown>): Promise<void> {
    const targets = [...this.subs];
    const ids = [...new Set(targets.map((s) => s.userId))];
    if (ids.length === 0) return;
    const hosts = await hostIdsAmong(this.ctx.database.db, ids);
    for (const s of targets) if (hosts.has(s.userId)) s.stream.send(event, data);
  }

  /**
   * End every open stream and stop listening. Called from the root preClose hook: kit's own
   * shutdown sweep only sees streams opened on the root instance, not in the /api/v1 plugin.
   */
  close(): void {
    this.unsubscribe();
    for (const s of [...this.subs]) s.stream.close();
  }
}
