import { commonEnv, type EnvValues, envBool, envInt, envVar } from "@app/kit/config";
import { metricsTokenEnv } from "@app/kit/http/metrics";
import { z } from "zod";
import { engineEnv } from "./execution/engine-env.js";
import { triggersEnv } from "./triggers/settings.js";

const optionalText = z.string().min(1).optional();

/** Every variable script-platform reads; the same spec validates start-up and prints --help. */
export const envSpec = {
  ...commonEnv("script-platform", 3002),
  PUBLIC_BASE_URL: envVar(
    z.url({ protocol: /^https?$/, error: "must be an absolute http(s) URL" }).optional(),
    "base URL reported by GET /version and used for links",
    { defaultText: "the listen URL" },
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
    "scripts running at once; beyond it a sync request gets 503 with Retry-After",
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
  ...triggersEnv,
  ...engineEnv,
  METRICS_TOKEN: metricsTokenEnv(),
};

export type Config = EnvValues<typeof envSpec>;
