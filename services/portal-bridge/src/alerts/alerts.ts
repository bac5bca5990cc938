import type { Clock, TimerHandle } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Logger } from "@app/kit/logger";
import type { KeepAlive } from "../keepalive/keepalive.js";
import type { TokenManager } from "../token/manager.js";
import type { FetchFn } from "../upstream/portal.js";
import { type AlertFormat, type AlertPriority, renderAlert } from "./format.js";

/**
 * Tells the parent when the bridge needs them, through ALERT_WEBHOOK_URL: the keep-alive
 * stopped, the token has under 3 days left, and (once both are fine again) recovered. Each
 * condition is announced once when it starts, not on every check; a delivery that fails is
 * tried again at the next check. The body is in the shape of ALERT_WEBHOOK_FORMAT (format.ts);
 * the digest and the set-up page's test alert go out through the same delivery.
 */
export const TOKEN_ALERT_MS = 3 * 86_400_000;
export const CHECK_EVERY_MS = 15 * 60_000;
const SEND_TIMEOUT_MS = 10_000;

export type AlertEvent = "keepalive_stopped" | "token_expiring" | "recovered" | "digest" | "test";
type Condition = "keepalive_stopped" | "token_expiring";

const TITLES: Record<AlertEvent, string> = {
  keepalive_stopped: "portal-bridge: keep-alive stopped",
  token_expiring: "portal-bridge: token expiring",
  recovered: "portal-bridge: recovered",
  digest: "School digest",
  test: "portal-bridge: test alert",
};

export interface Delivery {
  delivered: boolean;
  /** HTTP status of the receiver, null when it could not be reached. */
  status: number | null;
}

export interface AlertOptions {
  url: string;
  format: AlertFormat;
  clock: Clock;
  logger: Logger;
  keepalive: Pick<KeepAlive, "status" | "cause" | "onChange">;
  tokens: Pick<TokenManager, "info" | "onReplaced">;
  /** Renders an instant in school time for the messages. */
  label: (ms: number) => string;
  fetch?: FetchFn;
}

export type Alerts = ReturnType<typeof createAlerts>;

export function createAlerts(deps: AlertOptions) {
  /** Conditions announced and not yet over. */
  const active = new Set<Condition>();
  let timer: TimerHandle | null = null;
  let running: Promise<void> = Promise.resolve();
  const fetchFn: FetchFn = deps.fetch ?? fetch;
  deps.keepalive.onChange(() => check());
  deps.tokens.onReplaced(() => check());

  function start(): void {
    timer = deps.clock.setInterval(() => check(), CHECK_EVERY_MS);
    check();
  }

  function stop(): void {
    timer?.cancel();
    timer = null;
  }

  /** Resolves once every check queued so far has run (tests await it). */
  function settled(): Promise<void> {
    return running;
  }

  /** Checks run one after another, so an alert cannot be sent twice by overlapping checks. */
  function check(): void {
    running = running.then(() => evaluate()).catch(() => undefined);
  }

  function current(): Map<Condition, string> {
    const now = deps.clock.now();
    const out = new Map<Condition, string>();
    const ka = deps.keepalive.status();
    // "Stopped" because nothing is configured yet is the owner's set-up, not an event.
    if (ka.state === "stopped" && deps.keepalive.cause === "upstream_401")
      out.set(
        "keepalive_stopped",
        `portal-bridge: the keep-alive stopped (${ka.stopped_reason ?? "stopped"}). The portal session is gone: log in in a browser, copy the jwt cookie and paste it at /token.`,
      );
    const token = deps.tokens.info;
    if (token) {
      const left = token.claims.exp - now;
      if (left < TOKEN_ALERT_MS) {
        const days = Math.floor(Math.max(0, left) / 86_400_000);
        const hours = Math.floor((Math.max(0, left) % 86_400_000) / 3600_000);
        out.set(
          "token_expiring",
          left <= 0
            ? "portal-bridge: the portal token has expired. Log in in a browser and paste a fresh jwt cookie at /token."
            : `portal-bridge: the portal token expires ${deps.label(token.claims.exp)} (in ${days} d ${hours} h). Log in in a browser and paste a fresh jwt cookie at /token before then.`,
        );
      }
    }
    return out;
  }

  async function evaluate(): Promise<void> {
    const now = current();
    for (const [cond, message] of now)
      if (!active.has(cond) && (await send(cond, message)).delivered) active.add(cond);
    const over = [...active].filter((c) => !now.has(c));
    if (over.length === 0) return;
    const token = deps.tokens.info;
    const message = `portal-bridge: recovered (${over.map((c) => c.replace("_", " ")).join(", ")} no longer applies); keep-alive ${deps.keepalive.status().state}${token ? `, token valid until ${deps.label(token.claims.exp)}` : ""}.`;
    if ((await send("recovered", message)).delivered) for (const c of over) active.delete(c);
  }

  /** Sends one alert (also the digest and the test alert); never throws. */
  async function send(
    event: AlertEvent,
    text: string,
    opts: { title?: string; priority?: AlertPriority } = {},
  ): Promise<Delivery> {
    const { headers, body } = renderAlert(deps.format, {
      event,
      title: opts.title ?? TITLES[event],
      text,
      at: toIso(deps.clock.now()),
      priority:
        opts.priority ?? (event === "keepalive_stopped" || event === "token_expiring" ? "high" : "default"),
    });
    const ac = new AbortController();
    const timer = deps.clock.setTimeout(() => ac.abort(), SEND_TIMEOUT_MS);
    try {
      const res = await fetchFn(deps.url, {
        method: "POST",
        headers,
        body,
        redirect: "manual",
        signal: ac.signal,
      });
      await res.body?.cancel().catch(() => undefined);
      if (res.status < 200 || res.status >= 300) {
        deps.logger.warn(
          { alert: event, status: res.status },
          `alert webhook answered HTTP ${res.status}; will retry`,
        );
        return { delivered: false, status: res.status };
      }
      deps.logger.info({ alert: event }, `alert sent: ${event}`);
      return { delivered: true, status: res.status };
    } catch (err) {
      // The URL can carry a secret topic: never logged.
      deps.logger.warn(
        { alert: event, cause: (err as Error)?.name ?? "error" },
        "alert webhook could not be reached; will retry",
      );
      return { delivered: false, status: null };
    } finally {
      timer.cancel();
    }
  }

  return {
    start,
    stop,
    settled,
    check,
    send,
  };
}
