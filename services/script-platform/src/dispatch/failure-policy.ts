import type { Kysely } from "kysely";
import type { PlatformDB } from "../db/schema.js";

/**
 * Seam between the dispatcher (platform-runtime helper) and retries / dead letters
 * (platform-triggers helper, who owns this file). The dispatcher calls it inside the
 * transaction that settles a failed, non-reply outbox row. `retry` means: the policy has
 * rescheduled the row (set due_at / attempts); `dead` means: it wrote the dead letter and the
 * dispatcher deletes the row; `drop` means: delete the row (nothing else to do).
 */
export interface FailedRun {
  outboxId: string;
  appId: string;
  triggerId: string | null;
  scriptId: string;
  attempts: number;
  error: { kind: string; message: string };
  executionId: string;
}

export async function onRunFailed(
  _trx: Kysely<PlatformDB>,
  _run: FailedRun,
): Promise<"retry" | "dead" | "drop"> {
  return "drop"; // no retry policy yet: the platform-triggers helper replaces this
}
