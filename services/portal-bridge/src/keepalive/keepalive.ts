import type { Clock, TimerHandle } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Logger } from "@app/kit/logger";
import { type PortalClient, PortalError } from "../upstream/portal.js";

/**
 * Keeps the upstream session-store entry alive (seed, "Keep-alive task"). The entry's idle TTL
 * slides on every authenticated request, so a POST to refresh-session every interval keeps it.
 *
 *   running  --POST ok-->            running  (logs the budget left)
 *   running  --transient failure-->  retrying (next try in 5 minutes)
 *   running  --401-->                stopped  (for good; paste a new token at /token)
 *   stopped  --token replaced-->     running
 *   (start)  --interval 0-->         disabled
 *
 * Every cycle carries a generation number: a ping still in flight when the token is replaced
 * cannot stop (or reschedule) the newer cycle when its late answer arrives.
 */
export const RETRY_DELAY_MS = 5 * 60_000;

export type KeepAliveState = "running" | "retrying" | "stopped" | "disabled";

export interface KeepAliveStatus {
  state: KeepAliveState;
  interval_ms: number;
  next_at: string | null;
  generation: number;
  stopped_reason: string | null;
}

export interface UpstreamStatus {
  idle_timeout_s: number;
  last_budget_s: number | null;
  last_ok_at: string | null;
  last_error: string | null;
}

export interface KeepAliveOptions {
  clock: Clock;
  logger: Logger;
  portal: PortalClient;
  intervalMs: number;
  /** The token the next ping carries (null: nothing to keep alive). */
  currentToken: () => string | null;
}

/** Why the keep-alive is stopped: the upstream said 401, or there is nothing to keep alive. */
export type StopCause = "upstream_401" | "not_configured" | "no_token";

export class KeepAlive {
  private state: KeepAliveState;
  private stopCause: StopCause | null = null;
  private readonly listeners: (() => void)[] = [];
  private generation = 0;
  private timer: TimerHandle | null = null;
  private nextAt: number | null = null;
  private stoppedReason: string | null = null;
  /** Pings not yet answered, including stale ones from older generations. */
  private readonly inFlight = new Set<Promise<void>>();
  private lastBudgetS: number | null = null;
  private lastOkAt: number | null = null;
  private lastError: string | null = null;
  idleTimeoutS = 7200;

  constructor(private readonly opts: KeepAliveOptions) {
    this.state = opts.intervalMs === 0 ? "disabled" : "stopped";
  }

  /** Start a new cycle: ping now (the start-up probe), then every interval. */
  start(): void {
    if (this.opts.intervalMs === 0) {
      this.state = "disabled";
      return;
    }
    this.cancelTimer();
    this.generation += 1;
    if (!this.opts.portal.configured) {
      this.stop("the portal is not configured (PORTAL_BASE_URL)", "not_configured");
      return;
    }
    if (!this.opts.currentToken()) {
      this.stop("no token; paste one at /token", "no_token");
      return;
    }
    this.stoppedReason = null;
    this.stopCause = null;
    this.setState("running");
    this.ping(this.generation);
  }

  /** Called after every state change (alerts listen). */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  /** Why it is stopped (null unless state is "stopped"). */
  get cause(): StopCause | null {
    return this.state === "stopped" ? this.stopCause : null;
  }

  private setState(next: KeepAliveState): void {
    if (next === this.state) return;
    this.state = next;
    for (const fn of this.listeners) fn();
  }

  /** A token replacement was accepted: restart the cycle with it. */
  restart(): void {
    this.start();
  }

  /** Stop timers (process shutdown). */
  shutdown(): void {
    this.generation += 1;
    this.cancelTimer();
  }

  /** Resolves when every ping in flight (stale ones too) has been handled; tests await it. */
  async settled(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
  }

  status(): KeepAliveStatus {
    return {
      state: this.state,
      interval_ms: this.opts.intervalMs,
      next_at: this.nextAt === null ? null : toIso(this.nextAt),
      generation: this.generation,
      stopped_reason: this.stoppedReason,
    };
  }

  upstreamStatus(): UpstreamStatus {
    return {
      idle_timeout_s: this.idleTimeoutS,
      last_budget_s: this.lastBudgetS,
      last_ok_at: this.lastOkAt === null ? null : toIso(this.lastOkAt),
      last_error: this.lastError,
    };
  }

  /**
   * Another upstream request (a tool call) met a 401 with `token`: the session entry is gone,
   * so stop now instead of at the next ping, unless the token has been replaced meanwhile.
   */
  reportRejected(token: string | null, err: PortalError): void {
    if (this.state !== "running" && this.state !== "retrying") return;
    if (token === null || token !== this.opts.currentToken()) return;
    this.onUnauthorized(err);
  }

  private ping(gen: number): void {
    const token = this.opts.currentToken();
    this.nextAt = null;
    const run = this.opts.portal
      .refreshSession(token ? { token } : {})
      .then(
        (budget) => this.onSuccess(gen, budget),
        (err) => this.onFailure(gen, err),
      )
      .finally(() => {
        this.inFlight.delete(run);
      });
    this.inFlight.add(run);
  }

  private onSuccess(gen: number, budgetS: number): void {
    if (gen !== this.generation) return;
    this.lastBudgetS = budgetS;
    this.lastOkAt = this.opts.clock.now();
    this.lastError = null;
    this.setState("running");
    this.opts.logger.info(
      { budget_s: budgetS, budget_min: Math.floor(budgetS / 60), generation: gen },
      `keep-alive ok: upstream session budget ${budgetS} s (${Math.floor(budgetS / 60)} min) left`,
    );
    this.schedule(gen, this.opts.intervalMs);
  }

  private onFailure(gen: number, err: unknown): void {
    if (gen !== this.generation) return;
    const e = err instanceof PortalError ? err : new PortalError("network");
    if (e.isAuthFailure) {
      this.onUnauthorized(e);
      return;
    }
    this.lastError = e.message;
    if (e.isTransient) {
      this.setState("retrying");
      this.opts.logger.warn(
        { generation: gen, retry_in_s: RETRY_DELAY_MS / 1000, cause: e.kind },
        `keep-alive failed (${e.message}); retrying in ${RETRY_DELAY_MS / 60_000} minutes`,
      );
      this.schedule(gen, RETRY_DELAY_MS);
      return;
    }
    // Not a 401 and not transient (an odd 4xx, a broken body): retrying later is still the
    // best chance of keeping the entry, because only a 401 proves it is gone.
    this.setState("retrying");
    this.opts.logger.warn(
      { generation: gen, retry_in_s: RETRY_DELAY_MS / 1000, cause: e.kind },
      `keep-alive got an unexpected answer (${e.message}); retrying in 5 minutes`,
    );
    this.schedule(gen, RETRY_DELAY_MS);
  }

  private onUnauthorized(e: PortalError): void {
    const reason =
      e.kind === "session_expired"
        ? "upstream session expired due to inactivity (401)"
        : "upstream rejected the token (401)";
    this.lastError = e.message;
    // The budget last seen belonged to a session that no longer exists.
    this.lastBudgetS = null;
    this.stop(reason, "upstream_401");
    this.opts.logger.error(
      { keepalive: "stopped" },
      `keep-alive stopped for good: ${reason}. Retrying cannot revive a deleted session: log in to the portal in a browser, copy the jwt cookie and paste it at /token (PUT /api/token).`,
    );
  }

  private stop(reason: string, cause: StopCause): void {
    this.generation += 1;
    this.cancelTimer();
    this.nextAt = null;
    this.stoppedReason = reason;
    this.stopCause = cause;
    this.state = "stopped";
    // Listeners re-evaluate idempotently, so a stop with a new cause is announced too.
    for (const fn of this.listeners) fn();
  }

  private schedule(gen: number, ms: number): void {
    this.cancelTimer();
    this.nextAt = this.opts.clock.now() + ms;
    this.timer = this.opts.clock.setTimeout(() => {
      if (gen === this.generation) this.ping(gen);
    }, ms);
  }

  private cancelTimer(): void {
    this.timer?.cancel();
    this.timer = null;
  }
}
