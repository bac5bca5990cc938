import type { FastifyInstance, FastifyReply } from "fastify";
import { type Clock, systemClock, type TimerHandle } from "../clock.js";

export interface SseOptions {
  clock?: Clock;
  /** A `: ping` comment this often keeps proxies from closing the stream. */
  heartbeatMs?: number;
  /** Bytes the socket may hold unsent before the client counts as too slow and is dropped. */
  maxBufferBytes?: number;
  headers?: Record<string, string>;
}

/**
 * One server-sent-events connection. Writes never queue without bound: a client whose unsent
 * bytes exceed `maxBufferBytes` is disconnected (it reconnects and catches up by other means).
 */
export class SseStream {
  private closedFlag = false;
  private heartbeat: TimerHandle | null = null;
  private readonly closeHandlers: (() => void)[] = [];
  private readonly maxBuffer: number;
  dropped = false;

  constructor(
    private readonly reply: FastifyReply,
    opts: SseOptions,
  ) {
    const clock = opts.clock ?? systemClock;
    this.maxBuffer = opts.maxBufferBytes ?? 1024 * 1024;
    const raw = reply.raw;
    reply.hijack();
    raw.writeHead(200, {
      "content-type": "text/event-stream; charset=utf-8",
      "cache-control": "no-cache, no-transform",
      connection: "keep-alive",
      "x-accel-buffering": "no",
      ...opts.headers,
    });
    raw.write(": connected\n\n");
    raw.on("close", () => this.finish());
    raw.on("error", () => this.finish());
    const every = opts.heartbeatMs ?? 25_000;
    if (every > 0) this.heartbeat = clock.setInterval(() => this.comment("ping"), every);
    // Keyed by the Node server, shared by every encapsulated Fastify context of the app.
    const streams = registry(reply.server.server);
    streams.add(this);
    this.onClose(() => streams.delete(this));
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** Send one event; returns false if the stream is closed or the client was dropped. */
  send(event: string, data: unknown, id?: string): boolean {
    const payload = typeof data === "string" ? data : JSON.stringify(data);
    let frame = "";
    if (id !== undefined) frame += `id: ${id}\n`;
    frame += `event: ${event}\n`;
    for (const line of payload.split("\n")) frame += `data: ${line}\n`;
    return this.write(`${frame}\n`);
  }

  comment(text: string): boolean {
    return this.write(`: ${text.replace(/\n/g, " ")}\n\n`);
  }

  onClose(fn: () => void): void {
    if (this.closedFlag) fn();
    else this.closeHandlers.push(fn);
  }

  close(): void {
    if (this.closedFlag) return;
    this.reply.raw.end();
    this.finish();
  }

  private write(chunk: string): boolean {
    if (this.closedFlag) return false;
    const raw = this.reply.raw;
    raw.write(chunk);
    if (raw.writableLength > this.maxBuffer) {
      this.dropped = true;
      raw.destroy();
      this.finish();
      return false;
    }
    return true;
  }

  private finish(): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.heartbeat?.cancel();
    for (const fn of this.closeHandlers.splice(0)) fn();
  }
}

const registries = new WeakMap<object, Set<SseStream>>();
function registry(server: object): Set<SseStream> {
  let set = registries.get(server);
  if (!set) {
    set = new Set();
    registries.set(server, set);
  }
  return set;
}

/** Ends every open stream of an app; createHttpApp calls this on close so shutdown never hangs. */
export function closeAllSse(app: FastifyInstance): void {
  for (const s of [...registry(app.server)]) s.close();
}

export function openSse(reply: FastifyReply, opts: SseOptions = {}): SseStream {
  return new SseStream(reply, opts);
}
