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
  /** Which credential opened it (see /work/coord/bridge.md): "auth", "connector", "path", … */
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

export class SessionStore {
  private readonly sessions = new Map<string, Session>();
  /** Sessions created but not yet initialized count against the cap too. */
  private pending = 0;
  private readonly sweeper: TimerHandle;

  constructor(private readonly opts: SessionStoreOptions) {
    this.sweeper = opts.clock.setInterval(() => this.sweep(), Math.min(opts.idleMs, 60_000));
  }

  /** Open sessions (metrics read this). */
  get size(): number {
    return this.sessions.size;
  }

  /** Open sessions of one credential. */
  countFor(credential: string): number {
    let n = 0;
    for (const s of this.sessions.values()) if (s.credential === credential) n += 1;
    return n;
  }

  /** No request in flight, and either no stream or no request for the idle time. */
  private isIdle(s: Session, now: number): boolean {
    return s.active === 0 && (s.streams === 0 || now - s.lastUsed >= this.opts.idleMs);
  }

  /** The least recently used session matching `pick`. */
  private lru(pick: (s: Session) => boolean): Session | undefined {
    let best: Session | undefined;
    for (const s of this.sessions.values()) if (pick(s) && (!best || s.lastUsed < best.lastUsed)) best = s;
    return best;
  }

  private full(): AppError {
    return new AppError(
      503,
      "too_many_sessions",
      "Every MCP session of the bridge is busy; try again shortly.",
      { retry_after_s: 5 },
      { "retry-after": "5" },
    );
  }

  /** Make room for one more session of `credential`, evicting LRU idle sessions. */
  private makeRoom(credential: string): void {
    const now = this.opts.clock.now();
    const max = this.opts.maxSessions;
    const owner = isOwner(credential);
    // Another credential never reaches the global cap: one slot stays the owner's.
    const othersMax = Math.max(1, max - 1);
    const perCred = Math.min(this.opts.maxPerCredential ?? max, owner ? max : othersMax);
    const idle = (s: Session) => this.isIdle(s, now);
    while (this.countFor(credential) >= perCred) {
      const victim = this.lru((s) => s.credential === credential && idle(s));
      if (!victim) throw this.full();
      this.evict(victim, "its credential reached MCP_MAX_SESSIONS_PER_CREDENTIAL");
    }
    if (!owner && max > 1)
      while (this.othersCount() + this.pending >= othersMax) {
        const victim = this.lru((s) => !isOwner(s.credential) && idle(s));
        if (!victim) throw this.full();
        this.evict(victim, "one session slot stays reserved for the owner");
      }
    while (this.sessions.size + this.pending >= max) {
      // The owner closes another credential's session before one of its own.
      const others = (s: Session) => !isOwner(s.credential);
      const victim = owner
        ? (this.lru((s) => others(s) && idle(s)) ??
          this.lru((s) => others(s) && s.active === 0) ??
          this.lru(idle) ??
          this.lru((s) => s.active === 0))
        : this.lru(idle);
      if (!victim) throw this.full();
      this.evict(victim, "the bridge reached MCP_MAX_SESSIONS");
    }
  }

  private othersCount(): number {
    let n = 0;
    for (const s of this.sessions.values()) if (!isOwner(s.credential)) n += 1;
    return n;
  }

  private evict(s: Session, why: string): void {
    this.opts.logger.info(
      { credential: s.credential, idle_s: Math.round((this.opts.clock.now() - s.lastUsed) / 1000) },
      `MCP session closed to make room: ${why}; the least recently used idle one goes`,
    );
    // Removed from the map at once, so its next request gets 404 and the client re-initializes.
    if (s.id) this.sessions.delete(s.id);
    void this.closeSession(s);
  }

  get(id: string): Session | undefined {
    const s = this.sessions.get(id);
    if (s) s.lastUsed = this.opts.clock.now();
    return s;
  }

  /** A new session for an initialize request; evicts LRU idle sessions at a cap. */
  async create(credential = "default"): Promise<Session> {
    this.makeRoom(credential);
    this.pending += 1;
    const server = this.opts.makeServer();
    const session: Session = {
      id: null,
      transport: undefined as never,
      server,
      lastUsed: this.opts.clock.now(),
      credential,
      active: 0,
      streams: 0,
    };
    let settled = false;
    const settle = () => {
      if (!settled) {
        settled = true;
        this.pending -= 1;
      }
    };
    session.transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      enableJsonResponse: true,
      onsessioninitialized: (id) => {
        settle();
        session.id = id;
        session.lastUsed = this.opts.clock.now();
        this.sessions.set(id, session);
      },
      onsessionclosed: (id) => {
        this.sessions.delete(id);
      },
    });
    session.transport.onclose = () => {
      settle();
      if (session.id) this.sessions.delete(session.id);
    };
    await server.connect(session.transport);
    return session;
  }

  /** Called when an initialize request finished without creating a session (bad request). */
  abandon(session: Session): void {
    if (session.id === null) void this.closeSession(session);
  }

  private async closeSession(s: Session): Promise<void> {
    if (s.id) this.sessions.delete(s.id);
    try {
      await s.server.close();
    } catch {
      // Closing an already closed transport is harmless.
    }
  }

  sweep(): void {
    const cutoff = this.opts.clock.now() - this.opts.idleMs;
    for (const s of [...this.sessions.values()]) {
      // An open stream does not keep a session that has had no request for the idle time.
      if (s.active === 0 && s.lastUsed <= cutoff) {
        this.opts.logger.info("MCP session closed after idle timeout");
        void this.closeSession(s);
      }
    }
  }

  async closeAll(): Promise<void> {
    this.sweeper.cancel();
    await Promise.all([...this.sessions.values()].map((s) => this.closeSession(s)));
  }
}
