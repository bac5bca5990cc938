import type { Clock } from "@app/kit/clock";
import type { FastifyInstance } from "fastify";
import type { KeepAlive } from "../keepalive/keepalive.js";
import type { TokenManager } from "../token/manager.js";

/**
 * Readiness (contract "Parents and operations"): is the bridge able to answer with the portal
 * right now and in the next day? No secrets and no user data in the answer.
 */
export const TOKEN_EXPIRY_WARN_MS = 24 * 3600_000;

export type NotReadyCode = "no_token" | "upstream_session_dead" | "keepalive_stopped" | "token_expiring";

export type Readiness = { ready: true } | { ready: false; code: NotReadyCode; message: string };

export interface ReadinessDeps {
  clock: Clock;
  tokens: Pick<TokenManager, "info">;
  keepalive: Pick<KeepAlive, "status" | "cause">;
}

export function readiness(deps: ReadinessDeps): Readiness {
  const token = deps.tokens.info;
  if (!token)
    return { ready: false, code: "no_token", message: "No portal token is configured; paste one at /token." };
  const cause = deps.keepalive.cause;
  if (cause === "upstream_401")
    return {
      ready: false,
      code: "upstream_session_dead",
      message: "The portal session is gone (the portal answered 401); paste a fresh token at /token.",
    };
  if (deps.keepalive.status().state === "stopped")
    return {
      ready: false,
      code: "keepalive_stopped",
      message: "The keep-alive is stopped, so the portal session will lapse; see connection_status.",
    };
  const left = token.claims.exp - deps.clock.now();
  if (left < TOKEN_EXPIRY_WARN_MS)
    return {
      ready: false,
      code: "token_expiring",
      message:
        left <= 0
          ? "The portal token has expired; paste a fresh one at /token."
          : `The portal token expires in ${Math.max(1, Math.floor(left / 3600_000))} h; paste a fresh one at /token.`,
    };
  return { ready: true };
}

/** GET /readyz (open): 200 `ok`, or 503 with the reason code. */
export function registerReadiness(app: FastifyInstance, deps: ReadinessDeps): void {
  app.get("/readyz", async (_req, reply) => {
    const r = readiness(deps);
    reply.header("cache-control", "no-store");
    if (r.ready) return reply.type("text/plain; charset=utf-8").send("ok");
    return reply
      .code(503)
      .type("application/json")
      .send({ error: { code: r.code, message: r.message } });
  });
}
