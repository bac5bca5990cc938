export interface RetryPolicy {
  max_attempts: number;
  backoff_ms: number;
  max_backoff_ms: number;
}

export interface TriggerSettings {
  maxDepth: number;
  retry: RetryPolicy;
  deadLetterRetentionDays: number;
  abandonedRetentionDays: number;
}

export function triggerSettings(config: {
  PLATFORM_MAX_TRIGGER_DEPTH: number;
  PLATFORM_TRIGGER_MAX_ATTEMPTS: number;
  PLATFORM_TRIGGER_BACKOFF_MS: number;
  PLATFORM_TRIGGER_MAX_BACKOFF_MS: number;
  PLATFORM_DEAD_LETTER_RETENTION_DAYS: number;
  PLATFORM_ABANDONED_RETENTION_DAYS: number;
}): TriggerSettings {
  return {
    maxDepth: config.PLATFORM_MAX_TRIGGER_DEPTH,
    retry: {
      max_attempts: config.PLATFORM_TRIGGER_MAX_ATTEMPTS,
      backoff_ms: config.PLATFORM_TRIGGER_BACKOFF_MS,
      max_backoff_ms: Math.max(config.PLATFORM_TRIGGER_BACKOFF_MS, config.PLATFORM_TRIGGER_MAX_BACKOFF_MS),
    },
    deadLetterRetentionDays: config.PLATFORM_DEAD_LETTER_RETENTION_DAYS,
    abandonedRetentionDays: config.PLATFORM_ABANDONED_RETENTION_DAYS,
  };
}

export const DEFAULT_TRIGGER_SETTINGS: TriggerSettings = triggerSettings({
  PLATFORM_MAX_TRIGGER_DEPTH: 8,
  PLATFORM_TRIGGER_MAX_ATTEMPTS: 5,
  PLATFORM_TRIGGER_BACKOFF_MS: 1000,
  PLATFORM_TRIGGER_MAX_BACKOFF_MS: 300_000,
  PLATFORM_DEAD_LETTER_RETENTION_DAYS: 30,
  PLATFORM_ABANDONED_RETENTION_DAYS: 7,
});

/** Delay before attempt `failedAttempts + 1`: exponential from backoff_ms, capped. */
export function backoffDelayMs(policy: RetryPolicy, failedAttempts: number): number {
  const exp = Math.max(0, failedAttempts - 1);
  const raw = policy.backoff_ms * 2 ** Math.min(exp, 40);
  return Math.min(raw, policy.max_backoff_ms);
}
