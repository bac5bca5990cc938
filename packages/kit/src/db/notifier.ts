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

export function createPgNotifier(url: string, pool: pg.Pool): Notifier {
  const handlers = new Map<string, Set<(payload: string) => void>>();
  let client: pg.Client | null = null;
  let connecting: Promise<pg.Client> | null = null;
  let closed = false;

  const listener = async (): Promise<pg.Client> => {
    if (client) return client;
    connecting ??= (async () => {
      const c = new pg.Client({ connectionString: url });
      c.on("error", () => {});
      c.on("notification", (msg) => {
        for (const h of handlers.get(msg.channel) ?? []) h(msg.payload ?? "");
      });
      await c.connect();
      client = c;
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
      const c = await listener();
      let set = handlers.get(channel);
      if (!set) {
        set = new Set();
        handlers.set(channel, set);
        await c.query(`LISTEN "${channel}"`);
      }
      set.add(handler);
      return async () => {
        set.delete(handler);
        if (set.size === 0 && handlers.get(channel) === set) {
          handlers.delete(channel);
          if (!closed) await c.query(`UNLISTEN "${channel}"`).catch(() => {});
        }
      };
    },
    async close() {
      closed = true;
      handlers.clear();
      const c = client ?? (connecting ? await connecting.catch(() => null) : null);
      await c?.end().catch(() => {});
    },
  };
}
