import { availableParallelism } from "node:os";
import { envInt, envVar } from "@app/kit/config";
import { z } from "zod";

/**
 * Environment variables of the execution engine (contract "Engine"). Spread into the service's
 * envSpec (src/config.ts) so they are validated at start-up and listed by --help.
 */
export const engineEnv = {
  PLATFORM_WORKERS: envVar(envInt(availableParallelism(), 1, 256), "worker threads that run scripts", {
    defaultText: "number of cores",
  }),
  PLATFORM_APP_CONCURRENCY: envVar(
    z.coerce.number().int().min(1).max(4096).optional(),
    "runs of one app at once; beyond it that app's sync requests wait briefly, then 503 with Retry-After",
    { defaultText: "workers − 1, at least 1" },
  ),
  PLATFORM_SDK_CALLS_IN_FLIGHT: envVar(
    envInt(64, 1, 100_000),
    "SDK calls one run may have pending; beyond it the call throws a catchable sdk_busy error",
  ),
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
  PLATFORM_SDK_CALLS_PER_RUN: envVar(
    envInt(10_000, 1, 10_000_000),
    "SDK calls one run may make in total; beyond it the call throws a catchable sdk_limit error",
  ),
};

/** PLATFORM_APP_CONCURRENCY's default: one app alone can never occupy every worker. */
export function appConcurrency(config: {
  PLATFORM_WORKERS: number;
  PLATFORM_APP_CONCURRENCY?: number | undefined;
}) {
  return config.PLATFORM_APP_CONCURRENCY ?? Math.max(1, config.PLATFORM_WORKERS - 1);
}
