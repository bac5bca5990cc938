import { randomUUID } from "node:crypto";
import type { Clock, TimerHandle } from "@app/kit/clock";
import { AppError } from "@app/kit/errors";
import type { Logger } from "@app/kit/logger";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

/**
 * Stateful MCP sessions: a bounded map (cap + idle expiry on the injected clock). Clients that
 * never close their sessions must not lock the owner out, so at a cap the least recently used
 * idle session is closed to make room (its client gets the protocol's 404 on its next request
 * and re-initializes). Two caps: all sessions (MCP_MAX_SESSIONS) and the sessions of one
 * credential (MCP_MAX_SESSIONS_PER_CREDENTIAL), where a credential only ever evicts its own.
 * Only when every session at the cap has a request in flight is a new one refused with 503.
 *
 * A session is idle when no request is in flight and it has had none for the idle time; an
 * open GET stream alone does not keep it (clients that hold streams forever would otherwise
 * fill the store), and the stream is closed with the session. The owner (MCP_AUTH_TOKEN) always
 * has room: other credentials share all slots but one, their own cap is clamped below the
 * global cap, and at the cap the owner may close another credential's session that only holds
 * a stream.
 */
export interface Session {
  id: string | null;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  lastUsed: number;
  /** Which credential opened it: "auth", "connector", "path", … */
  credential: string;
  /** Requests (POST, DELETE) still open; such a session is never evicted. */
  active: number;
  /** Open GET streams; they do not count as use. */
  streams: number;
}

export interface SessionStoreOptions {
  clock: Clock;
  logger: Logger;
  maxSessions: number;
  /** Cap per credential; default maxSessions. */
  maxPerCredential?: number;
  idleMs: number;
  makeServer: () => McpServer;
}

/** Credentials of the owner: the shared secret, or anyone when no secret is configured. */
const OWNER = new Set(["auth", "open"]);
export const isOwner = (credential: string): boolean => OWNER.has(credential);

export type SessionStore = ReturnType<typeof createSessionStore>;

export function createSessionStore(deps: SessionStoreOptions) {
  const sessions = new Map<string, Session>();
  /** Sessions created but not yet initialized count against the cap too. */
  let pending = 0;
  const sweeper: TimerHandle = deps.clock.setInterval(() => sweep(), Math.min(deps.idleMs, 60_000));

  /** Open sessions (metrics read this). */
  function readSize(): number {
    return sessions.size;
  }

  /** Open sessions of one credential. */
  function countFor(credential: string): number {
    let n = 0;
    for (const s of sessions.values()) if (s.credential === credential) n += 1;
    return n;
  }

  /** No request in flight, and either no stream or no request for the idle time. */
  function isIdle(s: Session, now: number): boolean {
    return s.active === 0 && (s.streams === 0 || now - s.lastUsed >= deps.idleMs);
  }

  /** The least recently used session matching `pick`. */
  function lru(pick: (s: Session) => boolean): Session | undefined {
    let best: Session | undefined;
    for (const s of sessions.values()) if (pick(s) && (!best || s.lastUsed < best.lastUsed)) best = s;
    return best;
  }

  function full(): AppError {
    return new AppError(
      503,
      "too_many_sessions",
      "Every MCP session of the bridge is busy; try again shortly.",
      { retry_after_s: 5 },
      { "retry-after": "5" },
    );
  }

  /** Make room for one more session of `credential`, evicting LRU idle sessions. */
  function makeRoom(credential: string): void {
    const now = deps.clock.now();
    const max = deps.maxSessions;
    const owner = isOwner(credential);
    // Another credential never reaches the global cap: one slot stays the owner's.
    const othersMax = Math.max(1, max - 1);
    const perCred = Math.min(deps.maxPerCredential ?? max, owner ? max : othersMax);
    const idle = (s: Session) => isIdle(s, now);
    while (countFor(credential) >= perCred) {
      const victim = lru((s) => s.credential === credential && idle(s));
      if (!victim) throw full();
      evict(victim, "its credential reached MCP_MAX_SESSIONS_PER_CREDENTIAL");
    }
    if (!owner && max > 1)
      while (othersCount() + pending >= othersMax) {
        const victim = lru((s) => !isOwner(s.credential) && idle(s));
        if (!victim) throw full();
        evict(victim, "one session slot stays reserved for the owner");
      }
    while (sessions.size + pending >= max) {
      // The owner closes another credential's session before one of its own.
      const others = (s: Session) => !isOwner(s.credential);
      const victim = owner
        ? (lru((s) => others(s) && idle(s)) ??
          lru((s) => others(s) && s.active === 0) ??
          lru(idle) ??
          lru((s) => s.active === 0))
        : lru(idle);
      if (!victim) throw full();
      evict(victim, "the bridge reached MCP_MAX_SESSIONS");
    }
  }

  function othersCount(): number {
    let n = 0;
    for (const s of sessions.values()) if (!isOwner(s.credential)) n += 1;
    return n;
  }

  function evict(s: Session, why: string): void {
    deps.logger.info(
      { credential: s.credential, idle_s: Math.round((deps.clock.now() - s.lastUsed) / 1000) },
      `MCP session closed to make room: ${why}; the least recently used idle one goes`,
    );
    // Removed from the map at once, so its next request gets 404 and the client re-initializes.
    if (s.id) sessions.delete(s.id);
    void closeSession(s);
  }

  function get(id: string): Session | undefined {
    const s = sessions.get(id);
    if (s) s.lastUsed = deps.clock.now();
    return s;
  }

  /** A new session for an initialize request; evicts LRU idle sessions at a cap. */
  async function create(credential = "default"): Promise<Session> {
    makeRoom(credential);
    pending += 1;
    const server = deps.makeServer();
    const session: Session = {
      id: null,
      transport: undefined as never,
      server,
      lastUsed: deps.clock.now(),
      credential,
      active: 0,
      streams: 0,
    };
    let settled = false;
    const settle = () => {
      if (!settled) {
        settled = true;
        pending -= 1;
      }
    };
    session.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        settle();
        session.id = id;
        session.lastUsed = deps.clock.now();
        sessions.set(id, session);
      },
      onsessionclosed: (id) => {
        sessions.delete(id);
      },
    });
    session.transport.onclose = () => {
      settle();
      if (session.id) sessions.delete(session.id);
    };
    await server.connect(session.transport);
    return session;
  }

  /** Called when an initialize request finished without creating a session (bad request). */
  function abandon(session: Session): void {
    if (session.id === null) void closeSession(session);
  }

  async function closeSession(s: Session): Promise<void> {
    if (s.id) sessions.delete(s.id);
    try {
      await s.server.close();
    } catch {
      // Closing an already closed transport is harmless.
    }
  }

  function sweep(): void {
    const cutoff = deps.clock.now() - deps.idleMs;
    for (const s of [...sessions.values()]) {
      // An open stream does not keep a session that has had no request for the idle time.
      if (s.active === 0 && s.lastUsed <= cutoff) {
        deps.logger.info("MCP session closed after idle timeout");
        void closeSession(s);
      }
    }
  }

  async function closeAll(): Promise<void> {
    sweeper.cancel();
    await Promise.all([...sessions.values()].map((s) => closeSession(s)));
  }

  return {
    get size() {
      return readSize();
    },
    countFor,
    get,
    create,
    abandon,
    sweep,
    closeAll,
  };
}
