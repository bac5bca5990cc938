import { registerMetrics } from "@app/kit/http/metrics";
import type { FastifyInstance } from "fastify";
import type { KeepAlive, KeepAliveState } from "./keepalive/keepalive.js";
import type { SessionStore } from "./mcp/sessions.js";
import type { TokenManager } from "./token/manager.js";
import { BRIDGE_VERSION } from "./version.js";

const KEEPALIVE_STATES: readonly KeepAliveState[] = ["running", "retrying", "stopped", "disabled"];

/**
 * `GET /metrics` for the bridge: the kit's HTTP and process metrics (routes by pattern: the path
 * secret shows as `/:pathSecret/mcp`, never its value) plus keep-alive state, the upstream
 * token's remaining lifetime and open MCP sessions, read when Prometheus scrapes.
 */
export function registerBridgeMetrics(
  app: FastifyInstance,
  deps: { token: string | undefined; tokens: TokenManager; keepalive: KeepAlive; sessions: SessionStore },
): void {
  const metrics = registerMetrics(app, {
    token: deps.token,
    build: { name: "bridge", version: BRIDGE_VERSION },
  });
  metrics.gauge({
    name: "bridge_keepalive_state",
    help: "Keep-alive of the portal session: 1 for the state it is in (running, retrying, stopped, disabled).",
    labelNames: ["state"],
    collect: () => {
      const current = deps.keepalive.status().state;
      return KEEPALIVE_STATES.map((state) => ({ labels: { state }, value: state === current ? 1 : 0 }));
    },
  });
  metrics.gauge({
    name: "bridge_token_present",
    help: "1 when the bridge holds an upstream token, else 0.",
    collect: () => (deps.tokens.status().present ? 1 : 0),
  });
  metrics.gauge({
    name: "bridge_token_seconds_left",
    help: "Seconds until the upstream token expires (0 when expired or absent).",
    collect: () => deps.tokens.status().expires_in_s ?? 0,
  });
  metrics.gauge({
    name: "bridge_mcp_sessions",
    help: "Open MCP sessions.",
    collect: () => deps.sessions.size,
  });
}
