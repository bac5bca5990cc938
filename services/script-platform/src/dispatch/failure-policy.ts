import { type Clock, toIso } from "@app/kit/clock";
import type { Dialect, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import { effectiveRetry } from "../triggers/model.js";
import { findTriggerById } from "../triggers/repository.js";
import { backoffDelayMs, type RetryPolicy } from "../triggers/settings.js";
import { deadLetter, handlerRunFailed } from "./dead-letters.js";
import type { OutboxWriter } from "./enqueue.js";
import { failedOutboxRow, rescheduleOutboxRow } from "./enqueue-repository.js";

/**
 * What the dispatcher hands the failure policy, inside the transaction that settles a failed,
 * non-reply outbox row. `retry` means: the policy has rescheduled the row (set due_at /
 * attempts); `dead` means: it wrote the dead letter and the dispatcher deletes the row; `drop`
 * means: delete the row (nothing else to do).
 */
export interface FailedRun {
  outboxId: string;
  appId: string;
  triggerId: string | null;
  scriptId: string;
  /** Attempts made so far, the failed one included. */
  attempts: number;
  error: { kind: string; message: string };
  executionId: string;
}

export interface FailurePolicy {
  onRunFailed(trx: Kysely<PlatformDB>, run: FailedRun): Promise<"retry" | "dead" | "drop">;
}

/**
 * Retry policy: the trigger's `retry` (else `defaults`, the PLATFORM_TRIGGER_* values; rows
 * without a trigger, e.g. async HTTP dispatch, use the defaults). Attempt n+1 is due
 * backoff_ms·2^(n-1) after failure n, capped at max_backoff_ms; after max_attempts the row is
 * dead-lettered, and a dead_letter handler that runs out resolves its dead letter as
 * handler_failed instead.
 */
export function createFailurePolicy(deps: {
  clock: Clock;
  dialect: Dialect;
  defaults: RetryPolicy;
  outbox: OutboxWriter;
}): FailurePolicy {
  const { clock, dialect, defaults, outbox } = deps;
  return {
    async onRunFailed(trx, run) {
      const row = await failedOutboxRow(trx, run.outboxId);
      if (!row) return "drop";
      const trigger = run.triggerId ? await findTriggerById(trx, dialect, run.triggerId) : null;
      const policy = effectiveRetry(trigger?.retry ?? null, defaults);
      const now = clock.now();
      if (run.attempts < policy.max_attempts) {
        await rescheduleOutboxRow(
          trx,
          run.outboxId,
          toIso(now + backoffDelayMs(policy, run.attempts)),
          run.attempts,
        );
        return "retry";
      }
      if (row.source_kind === "dead_letter") {
        await handlerRunFailed(trx, run.outboxId, toIso(now));
        return "drop";
      }
      await deadLetter(
        trx,
        dialect,
        outbox,
        {
          outboxId: run.outboxId,
          appId: run.appId,
          triggerId: run.triggerId,
          scriptId: run.scriptId,
          sourceKind: row.source_kind,
          payload: row.payload,
          principal: row.principal,
          depth: row.depth,
          attempts: run.attempts,
          error: run.error,
          executionId: run.executionId,
        },
        toIso(now),
      );
      return "dead";
    },
  };
}
