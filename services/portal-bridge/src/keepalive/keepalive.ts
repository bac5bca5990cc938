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

export type KeepAlive = ReturnType<typeof createKeepAlive>;

export function createKeepAlive(deps: KeepAliveOptions) {
  let state: KeepAliveState = deps.intervalMs === 0 ? "disabled" : "stopped";
  let stopCause: StopCause | null = null;
  const listeners: (() => void)[] = [];
  let generation = 0;
  let timer: TimerHandle | null = null;
  let nextAt: number | null = null;
  let stoppedReason: string | null = null;
  /** Pings not yet answered, including stale ones from older generations. */
  const inFlight = new Set<Promise<void>>();
  let lastBudgetS: number | null = null;
  let lastOkAt: number | null = null;
  let lastError: string | null = null;
  let idleTimeoutS = 7200;

  /** Start a new cycle: ping now (the start-up probe), then every interval. */
  function start(): void {
    if (deps.intervalMs === 0) {
      state = "disabled";
      return;
    }
    cancelTimer();
    generation += 1;
    if (!deps.portal.configured) {
      stop("the portal is not configured (PORTAL_BASE_URL)", "not_configured");
      return;
    }
    if (!deps.currentToken()) {
      stop("no token; paste one at /token", "no_token");
      return;
    }
    stoppedReason = null;
    stopCause = null;
    setState("running");
    ping(generation);
  }

  /** Called after every state change (alerts listen). */
  function onChange(fn: () => void): void {
    listeners.push(fn);
  }

  /** Why it is stopped (null unless state is "stopped"). */
  function readCause(): StopCause | null {
    return state === "stopped" ? stopCause : null;
  }

  function setState(next: KeepAliveState): void {
    if (next === state) return;
    state = next;
    for (const fn of listeners) fn();
  }

  /** A token replacement was accepted: restart the cycle with it. */
  function restart(): void {
    start();
  }

  /** Stop timers (process shutdown). */
  function shutdown(): void {
    generation += 1;
    cancelTimer();
  }

  /** Resolves when every ping in flight (stale ones too) has been handled; tests await it. */
  async function settled(): Promise<void> {
    while (inFlight.size > 0) await Promise.all([...inFlight]);
  }

  function status(): KeepAliveStatus {
    return {
      state: state,
      interval_ms: deps.intervalMs,
      next_at: nextAt === null ? null : toIso(nextAt),
      generation: generation,
      stopped_reason: stoppedReason,
    };
  }

  function upstreamStatus(): UpstreamStatus {
    return {
      idle_timeout_s: idleTimeoutS,
      last_budget_s: lastBudgetS,
      last_ok_at: lastOkAt === null ? null : toIso(lastOkAt),
      last_error: lastError,
    };
  }

  /**
   * Another upstream request (a tool call) met a 401 with `token`: the session entry is gone,
   * so stop now instead of at the next ping, unless the token has been replaced meanwhile.
   */
  function reportRejected(token: string | null, err: PortalError): void {
    if (state !== "running" && state !== "retrying") return;
    if (token === null || token !== deps.currentToken()) return;
    onUnauthorized(err);
  }

  function ping(gen: number): void {
    const token = deps.currentToken();
    nextAt = null;
    const run = deps.portal
      .refreshSession(token ? { token } : {})
      .then(
        (budget) => onSuccess(gen, budget),
        (err) => onFailure(gen, err),
      )
      .finally(() => {
        inFlight.delete(run);
      });
    inFlight.add(run);
  }

  function onSuccess(gen: number, budgetS: number): void {
    if (gen !== generation) return;
    lastBudgetS = budgetS;
    lastOkAt = deps.clock.now();
    lastError = null;
    setState("running");
    deps.logger.info(
      { budget_s: budgetS, budget_min: Math.floor(budgetS / 60), generation: gen },
      `keep-alive ok: upstream session budget ${budgetS} s (${Math.floor(budgetS / 60)} min) left`,
    );
    schedule(gen, deps.intervalMs);
  }

  function onFailure(gen: number, err: unknown): void {
    if (gen !== generation) return;
    const e = err instanceof PortalError ? err : new PortalError("network");
    if (e.isAuthFailure) {
      onUnauthorized(e);
      return;
    }
    lastError = e.message;
    if (e.isTransient) {
      setState("retrying");
      deps.logger.warn(
        { generation: gen, retry_in_s: RETRY_DELAY_MS / 1000, cause: e.kind },
        `keep-alive failed (${e.message}); retrying in ${RETRY_DELAY_MS / 60_000} minutes`,
      );
      schedule(gen, RETRY_DELAY_MS);
      return;
    }
    // Not a 401 and not transient (an odd 4xx, a broken body): retrying later is still the
    // best chance of keeping the entry, because only a 401 proves it is gone.
    setState("retrying");
    deps.logger.warn(
      { generation: gen, retry_in_s: RETRY_DELAY_MS / 1000, cause: e.kind },
      `keep-alive got an unexpected answer (${e.message}); retrying in 5 minutes`,
    );
    schedule(gen, RETRY_DELAY_MS);
  }

  function onUnauthorized(e: PortalError): void {
    const reason =
      e.kind === "session_expired"
        ? "upstream session expired due to inactivity (401)"
        : "upstream rejected the token (401)";
    lastError = e.message;
    // The budget last seen belonged to a session that no longer exists.
    lastBudgetS = null;
    stop(reason, "upstream_401");
    deps.logger.error(
      { keepalive: "stopped" },
      `keep-alive stopped for good: ${reason}. Retrying cannot revive a deleted session: log in to the portal in a browser, copy the jwt cookie and paste it at /token (PUT /api/token).`,
    );
  }

  function stop(reason: string, cause: StopCause): void {
    generation += 1;
    cancelTimer();
    nextAt = null;
    stoppedReason = reason;
    stopCause = cause;
    state = "stopped";
    // Listeners re-evaluate idempotently, so a stop with a new cause is announced too.
    for (const fn of listeners) fn();
  }

  function schedule(gen: number, ms: number): void {
    cancelTimer();
    nextAt = deps.clock.now() + ms;
    timer = deps.clock.setTimeout(() => {
      if (gen === generation) ping(gen);
    }, ms);
  }

  function cancelTimer(): void {
    timer?.cancel();
    timer = null;
  }

  return {
    /** The upstream's idle timeout in seconds (JWT_TIMEOUT_SECONDS from its config, default 7200). */
    get idleTimeoutS(): number {
      return idleTimeoutS;
    },
    set idleTimeoutS(s: number) {
      idleTimeoutS = s;
    },
    get cause() {
      return readCause();
    },
    start,
    onChange,
    restart,
    shutdown,
    settled,
    status,
    upstreamStatus,
    reportRejected,
  };
}
