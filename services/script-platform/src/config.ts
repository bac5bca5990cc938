import { availableParallelism } from "node:os";
import { ConfigError, commonEnv, type EnvValues, envBool, envInt, envVar } from "@app/kit/config";
import { metricsTokenEnv } from "@app/kit/http/metrics";
import { proxyEnv } from "@app/kit/http/proxy";
import { z } from "zod";

const optionalText = z.string().min(1).optional();

/** Every variable script-platform reads; the same spec validates start-up and prints --help. */
export const envSpec = {
  ...commonEnv("script-platform", 3002),
  ...proxyEnv(),
  PLATFORM_PUBLIC_URL: envVar(
    z.url({ protocol: /^https?$/, error: "must be an absolute http(s) URL" }).optional(),
    "the platform's public URL, reported by GET /version; https also makes the session cookie Secure",
    { defaultText: "the origin the request came to (through a proxy: see TRUST_PROXY)" },
  ),
  PUBLIC_BASE_URL: envVar(
    z.url({ protocol: /^https?$/, error: "must be an absolute http(s) URL" }).optional(),
    "older name of PLATFORM_PUBLIC_URL (used when that is unset)",
  ),
  PLATFORM_ADMIN_USERNAME: envVar(
    optionalText,
    "bootstrap the first admin account with this username (inert once any admin exists); set together with PLATFORM_ADMIN_PASSWORD. When both are unset on a fresh install an `admin` account with a random password is created and the password printed once",
  ),
  PLATFORM_ADMIN_PASSWORD: envVar(
    z.string().min(8, "must be at least 8 characters").optional(),
    "password of the bootstrap admin (see PLATFORM_ADMIN_USERNAME)",
    { secret: true },
  ),
  PLATFORM_SECRET_KEY: envVar(
    z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, "must be 64 hexadecimal characters (32 bytes)")
      .optional(),
    "master key for AES-256-GCM encryption of secrets, signing keys and inbound email secrets; required in production. Unset: read from, or generated once into, DATA_DIR/secret.key",
    { secret: true },
  ),
  PLATFORM_SESSION_TTL_HOURS: envVar(
    envInt(24, 1, 24 * 365),
    "sliding lifetime of an admin session, in hours (each use extends it)",
  ),
  PLATFORM_FILES_ROOT: envVar(optionalText, "where stored files' bytes live", {
    defaultText: "DATA_DIR/files",
  }),
  PLATFORM_HTTP_ALLOW_PRIVATE: envVar(
    envBool(false),
    "development only: lift the outbound HTTP private-range deny-list (logs a start-up warning)",
  ),
  PLATFORM_MAX_TRIGGER_DEPTH: envVar(envInt(8, 1, 64), "maximum trigger chain depth"),
  PLATFORM_MODULE_CACHE_SIZE: envVar(envInt(512, 1, 100_000), "compiled module cache entries"),
  PLATFORM_SECRET_MAX_VALUE_BYTES: envVar(envInt(65_536, 1, 16 * 1024 * 1024), "largest secret value"),
  PLATFORM_MAX_CONCURRENCY: envVar(
    envInt(32, 1, 4096),
    "scripts running at once, a quarter of them kept for sync requests (triggered and async runs take at most the rest); beyond it a sync request waits up to 1 s for a slot; more than this many waiting get 503 with Retry-After",
  ),
  PLATFORM_SANDBOX_MAX_OPERATIONS: envVar(
    envInt(10_000_000, 1),
    "ceiling (and default when a script sets none) of sandbox.max_operations: interpreter operations per run",
  ),
  PLATFORM_SANDBOX_MAX_STRING_SIZE: envVar(
    envInt(1_048_576, 1),
    "ceiling (and default) of sandbox.max_string_size, in bytes",
  ),
  PLATFORM_SANDBOX_MAX_ARRAY_SIZE: envVar(
    envInt(100_000, 1),
    "ceiling (and default) of sandbox.max_array_size, in entries",
  ),
  PLATFORM_SANDBOX_MAX_MAP_SIZE: envVar(
    envInt(100_000, 1),
    "ceiling (and default) of sandbox.max_map_size, in entries",
  ),
  PLATFORM_SANDBOX_MAX_CALL_LEVELS: envVar(
    envInt(128, 1, 100_000),
    "ceiling (and default) of sandbox.max_call_levels, nested calls",
  ),
  PLATFORM_SANDBOX_MAX_EXPR_DEPTH: envVar(
    envInt(128, 1, 100_000),
    "ceiling (and default) of sandbox.max_expr_depth, expression nesting checked at save time",
  ),
  // Triggers, retries, dead letters and retention.
  PLATFORM_TRIGGER_MAX_ATTEMPTS: envVar(
    envInt(5, 1, 100),
    "default attempts (first run included) of a triggered run before it is dead-lettered",
  ),
  PLATFORM_TRIGGER_BACKOFF_MS: envVar(
    envInt(1000, 0, 86_400_000),
    "default first retry delay; doubles on every further attempt",
  ),
  PLATFORM_TRIGGER_MAX_BACKOFF_MS: envVar(envInt(300_000, 0, 86_400_000), "default cap of the retry delay"),
  PLATFORM_DEAD_LETTER_RETENTION_DAYS: envVar(
    envInt(30, 1, 3650),
    "resolved dead letters older than this are deleted",
  ),
  PLATFORM_ABANDONED_RETENTION_DAYS: envVar(
    envInt(7, 1, 3650),
    "abandoned-execution records older than this are deleted",
  ),
  // The execution engine (README "Engine").
  PLATFORM_WORKERS: envVar(envInt(availableParallelism(), 1, 256), "worker threads that run scripts", {
    defaultText: "number of cores",
  }),
  PLATFORM_CLAIM_HEARTBEAT_S: envVar(
    envInt(10, 1, 3600),
    "how often a process renews the lease of the outbox rows it holds (its heartbeat); below PLATFORM_CLAIM_TAKEOVER_S",
  ),
  PLATFORM_CLAIM_TAKEOVER_S: envVar(
    envInt(30, 2, 3600),
    "lease of a claimed outbox row: rows of a process that stopped renewing them (it died) are taken over by another process after at most this long",
  ),
  PLATFORM_SPARE_WORKERS: envVar(
    envInt(4, 0, 256),
    "worker threads started on demand beyond PLATFORM_WORKERS when a run of an app below its cap finds every worker taken by other apps (e.g. hogs running to their timeout); each stops after 30 s idle",
  ),
  PLATFORM_BLANK_CONTEXTS: envVar(
    envInt(128, 0, 256),
    "sandbox contexts (SDK prelude and web APIs evaluated, no script) each worker thread builds while it holds no run, so the first burst of runs of a script skips most of building theirs; each holds about 135 KB of the worker's memory; 0: none",
  ),
  PLATFORM_APP_CONCURRENCY: envVar(
    z.coerce.number().int().min(1).max(4096).optional(),
    "runs of one app executing JavaScript at once (runs waiting on an SDK call, fetch or a timer do not count); beyond it that app's sync requests wait briefly, then 503 with Retry-After",
    { defaultText: "workers − 1, at least 1" },
  ),
  PLATFORM_APP_QUEUE: envVar(
    envInt(256, 1, 100_000),
    "sync requests of one app waiting beyond PLATFORM_APP_CONCURRENCY; past it 503 busy with Retry-After at once",
  ),
  PLATFORM_SDK_CALLS_IN_FLIGHT: envVar(
    envInt(64, 1, 100_000),
    "SDK calls one run may have pending; beyond it the call throws a catchable sdk_busy error",
  ),
  PLATFORM_SDK_CALLS_PER_RUN: envVar(
    envInt(10_000, 1, 10_000_000),
    "SDK calls one run may make in total; beyond it the call throws a catchable sdk_limit error",
  ),
  // Realtime subscriber tokens (pubsub.subscriberToken): checked together by subscriberTokenTtl().
  PLATFORM_SUBSCRIBER_TOKEN_TTL_S: envVar(
    envInt(3600, 1, 365 * 86_400),
    "lifetime of a pubsub subscriber token when the script asks for none (clamped to the min/max below)",
  ),
  PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S: envVar(
    envInt(60, 1, 365 * 86_400),
    "shortest subscriber token lifetime a script may ask for (ttl_s is raised to it)",
  ),
  PLATFORM_SUBSCRIBER_TOKEN_MAX_TTL_S: envVar(
    envInt(7 * 86_400, 1, 365 * 86_400),
    "longest subscriber token lifetime a script may ask for (ttl_s is lowered to it)",
  ),
  METRICS_TOKEN: metricsTokenEnv(),
};

export type Config = EnvValues<typeof envSpec>;

/** Lifetime of subscriber tokens, in seconds: the default and the clamps of a script's ttl_s. */
export interface TokenTtl {
  default: number;
  min: number;
  max: number;
}

/**
 * PLATFORM_SUBSCRIBER_TOKEN_* as one value. Each variable is checked alone by envSpec; here they
 * are checked together (min ≤ default ≤ max), so a bad combination stops start-up with one line
 * naming the variable and the rule.
 */
export function subscriberTokenTtl(
  config: Pick<
    Config,
    | "PLATFORM_SUBSCRIBER_TOKEN_TTL_S"
    | "PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S"
    | "PLATFORM_SUBSCRIBER_TOKEN_MAX_TTL_S"
  >,
): TokenTtl {
  const ttl = {
    default: config.PLATFORM_SUBSCRIBER_TOKEN_TTL_S,
    min: config.PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S,
    max: config.PLATFORM_SUBSCRIBER_TOKEN_MAX_TTL_S,
  };
  if (ttl.min > ttl.max)
    throw new ConfigError(
      "PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S",
      "must not exceed PLATFORM_SUBSCRIBER_TOKEN_MAX_TTL_S",
    );
  if (ttl.default < ttl.min || ttl.default > ttl.max)
    throw new ConfigError(
      "PLATFORM_SUBSCRIBER_TOKEN_TTL_S",
      "must lie between PLATFORM_SUBSCRIBER_TOKEN_MIN_TTL_S and PLATFORM_SUBSCRIBER_TOKEN_MAX_TTL_S",
    );
  return ttl;
}

/**
 * PLATFORM_CLAIM_HEARTBEAT_S and PLATFORM_CLAIM_TAKEOVER_S in milliseconds, checked together: a
 * heartbeat as long as the lease would let a live process's rows be taken over.
 */
export function claimLease(
  config: Pick<Config, "PLATFORM_CLAIM_HEARTBEAT_S" | "PLATFORM_CLAIM_TAKEOVER_S">,
): { heartbeatMs: number; leaseMs: number } {
  if (config.PLATFORM_CLAIM_HEARTBEAT_S >= config.PLATFORM_CLAIM_TAKEOVER_S)
    throw new ConfigError("PLATFORM_CLAIM_HEARTBEAT_S", "must be below PLATFORM_CLAIM_TAKEOVER_S");
  return {
    heartbeatMs: config.PLATFORM_CLAIM_HEARTBEAT_S * 1000,
    leaseMs: config.PLATFORM_CLAIM_TAKEOVER_S * 1000,
  };
}
