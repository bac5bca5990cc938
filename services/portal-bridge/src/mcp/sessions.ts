import { randomUUID } from "node:crypto";
import type { Clock, TimerHandle } from "@app/kit/clock";
import { AppError } from "@app/kit/errors";
import type { Logger } from "@app/kit/logger";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

/**
 * Stateful MCP sessions: a bounded map (cap + idle expiry on the injected clock). At the cap a
 * new session is refused with 503 and Retry-After rather than evicting someone else's.
 */
export interface Session {
  id: string | null;
  transport: StreamableHTTPServerTransport;
  server: McpServer;
  lastUsed: number;
  /** Requests (including a listening GET stream) still open; such a session is not idle. */
  active: number;
}

export interface SessionStoreOptions {
  clock: Clock;
  logger: Logger;
  maxSessions: number;
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

  get size(): number {
    return this.sessions.size;
  }

  get(id: string): Session | undefined {
    const s = this.sessions.get(id);
    if (s) s.lastUsed = this.opts.clock.now();
    return s;
  }

  /** A new session for an initialize request; throws 503 at the cap. */
  async create(): Promise<Session> {
    if (this.sessions.size + this.pending >= this.opts.maxSessions)
      throw new AppError(
        503,
        "too_many_sessions",
        "The bridge has reached its MCP session limit; try again later or close an unused session.",
        { retry_after_s: 30 },
        { "retry-after": "30" },
      );
    this.pending += 1;
    const server = this.opts.makeServer();
    const session: Session = {
      id: null,
      transport: undefined as never,
      server,
      lastUsed: this.opts.clock.now(),
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
