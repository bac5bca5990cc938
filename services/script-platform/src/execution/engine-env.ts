// The engine's variables are declared with the rest in src/config.ts (config imports no capability).
/** PLATFORM_APP_CONCURRENCY's default: one app alone can never occupy every worker. */
export function appConcurrency(config: {
  PLATFORM_WORKERS: number;
  PLATFORM_APP_CONCURRENCY?: number | undefined;
}) {
  return config.PLATFORM_APP_CONCURRENCY ?? Math.max(1, config.PLATFORM_WORKERS - 1);
}
