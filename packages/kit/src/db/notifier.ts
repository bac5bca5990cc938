import { EventEmitter } from "node:events";
import pg from "pg";

/**
 * Cross-process notifications: LISTEN/NOTIFY on PostgreSQL, an in-process emitter on SQLite
 * (one process owns an embedded database). Every subscriber, the publisher's own process
 * included, receives each message once.
 */
export interface Notifier {
  publish(channel: string, payload: string): Promise<void>;
  subscribe(channel: string, handler: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
}

const CHANNEL_RE = /^[a-z_][a-z0-9_]{0,62}$/;
function checkChannel(channel: string): void {
  if (!CHANNEL_RE.test(channel)) throw new Error(`invalid notification channel name: ${channel}`);
}

export function createLocalNotifier(): Notifier {
  const em = new EventEmitter();
  em.setMaxListeners(0);
  return {
    async publish(channel, payload) {
      checkChannel(channel);
      queueMicrotask(() => em.emit(channel, payload));
    },
    async subscribe(channel, handler) {
      checkChannel(channel);
      em.on(channel, handler);
      return async () => void em.off(channel, handler);
    },
    async close() {
      em.removeAllListeners();
    },
  };
}

/** Pauses between reconnect attempts of the LISTEN connection (the last one repeats). */
const RECONNECT_DELAYS_MS = [100, 250, 500, 1000, 2000, 5000];

/**
 * LISTEN/NOTIFY over one dedicated connection. When that connection dies (server restart, a cut
 * connection) it reconnects with backoff and LISTENs again on every channel; notifications sent
 * while it was away are lost, so subscribers that cache must also re-check now and then.
 */
export function createPgNotifier(
  url: string,
  pool: pg.Pool,
  outage?: { failed(err: unknown): void },
): Notifier {
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let client: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  let closed = false;
  let attempt = 0;
  let retry: NodeJS.Timeout | null = null;

  const scheduleReconnect = () => {
    if (closed || retry || handlers.size === 0) return;
    const delay = RECONNECT_DELAYS_MS[Math.min(attempt, RECONNECT_DELAYS_MS.length - 1)] ?? 5000;
    attempt += 1;
    retry = setTimeout(() => {
      retry = null;
      listener().catch(() => scheduleReconnect());
    }, delay);
    retry.unref();
  };

  const lost = (c: pg.Client, err?: unknown) => {
    if (client !== c) return;
    client = null;
    connecting = null;
    if (closed) return;
    if (err) outage?.failed(err);
    c.end().catch(() => {});
    scheduleReconnect();
  };

  const listener = async (): Promise<pg.Client> => {
    if (client) return client;
    connecting ??= (async () => {
      const c = new pg.Client({ connectionString: url });
      c.on("error", (err) => lost(c, err));
      c.on("end", () => lost(c, new Error("Connection terminated unexpectedly")));
      c.on("notification", (msg) => {
        for (const h of handlers.get(msg.channel) ?? []) h(msg.payload ?? "");
      });
      try {
        await c.connect();
        for (const channel of handlers.keys()) await c.query(`LISTEN "${channel}"`);
      } catch (err) {
        connecting = null;
        c.end().catch(() => {});
        throw err;
      }
      if (closed) {
        await c.end().catch(() => {});
        throw new Error("notifier closed");
      }
      client = c;
      attempt = 0;
      return c;
    })();
    return connecting;
  };

  return {
    async publish(channel, payload) {
      checkChannel(channel);
      await pool.query("SELECT pg_notify($1, $2)", [channel, payload]);
    },
    async subscribe(channel, handler) {
      checkChannel(channel);
      let set = handlers.get(channel);
      if (!set) {
        const c = await listener();
        set = handlers.get(channel);
        if (!set) {
          set = new Set();
          handlers.set(channel, set);
          await c.query(`LISTEN "${channel}"`);
        }
      }
      set.add(handler);
      const own = set;
      return async () => {
        own.delete(handler);
        if (own.size === 0 && handlers.get(channel) === own) {
          handlers.delete(channel);
          if (!closed && client) await client.query(`UNLISTEN "${channel}"`).catch(() => {});
        }
      };
    },
    async close() {
      closed = true;
      handlers.clear();
      if (retry) clearTimeout(retry);
      retry = null;
      const c = client ?? (connecting ? await connecting.catch(() => null) : null);
      client = null;
      await c?.end().catch(() => {});
    },
  };
}
