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
 */
export interface Session {
  id: string | null;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  lastUsed: number;
  /** Which credential opened it: "auth", "connector", "path", … */
  credential: string;
  /** Requests (including a listening GET stream) still open; such a session is not idle. */
  active: number;
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

  /** The least recently used session with no request in flight, optionally of one credential. */
  private lruIdle(credential?: string): Session | undefined {
    let best: Session | undefined;
    for (const s of this.sessions.values())
      if (s.active === 0 && (credential === undefined || s.credential === credential))
        if (!best || s.lastUsed < best.lastUsed) best = s;
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
    const perCred = this.opts.maxPerCredential ?? this.opts.maxSessions;
    while (this.countFor(credential) >= perCred) {
      const victim = this.lruIdle(credential);
      if (!victim) throw this.full();
      this.evict(victim, "its credential reached MCP_MAX_SESSIONS_PER_CREDENTIAL");
    }
    while (this.sessions.size + this.pending >= this.opts.maxSessions) {
      const victim = this.lruIdle();
      if (!victim) throw this.full();
      this.evict(victim, "the bridge reached MCP_MAX_SESSIONS");
    }
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
