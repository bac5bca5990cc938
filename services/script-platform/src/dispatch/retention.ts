import type { Clock, TimerHandle } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { PlatformDB } from "../db/schema.js";
import type { TriggerSettings } from "../triggers/settings.js";
import { deleteResolvedBefore } from "./dead-letters-repository.js";
import { deleteAbandonedBefore, deleteRealtimeMessagesBefore } from "./retention-repository.js";

const DAY_MS = 86_400_000;
/** Realtime messages are only a hand-off to live subscribers; an hour is plenty. */
const REALTIME_KEEP_MS = 3_600_000;

export interface RetentionResult {
  deadLetters: number;
  abandonedExecutions: number;
  realtimeMessages: number;
}

/**
 * Deletes resolved dead letters older than PLATFORM_DEAD_LETTER_RETENTION_DAYS, abandoned
 * execution records older than PLATFORM_ABANDONED_RETENTION_DAYS and stale realtime messages.
 * Runs at start and then every `everyMs` (default hourly).
 */
export function createRetentionJob(opts: {
  database: Database<PlatformDB>;
  clock: Clock;
  logger: Logger;
  settings: Pick<TriggerSettings, "deadLetterRetentionDays" | "abandonedRetentionDays">;
  everyMs?: number;
}) {
  const { database, clock, logger, settings } = opts;
  let timer: TimerHandle | null = null;

  async function run(): Promise<RetentionResult> {
    const now = clock.now();
    return database.writeTx(async (trx) => {
      const deadLetters = await deleteResolvedBefore(
        trx,
        toIso(now - settings.deadLetterRetentionDays * DAY_MS),
      );
      const abandonedExecutions = await deleteAbandonedBefore(
        trx,
        toIso(now - settings.abandonedRetentionDays * DAY_MS),
      );
      const realtimeMessages = await deleteRealtimeMessagesBefore(trx, toIso(now - REALTIME_KEEP_MS));
      return { deadLetters, abandonedExecutions, realtimeMessages };
    });
  }

  const safeRun = () =>
    run()
      .then((r) => {
        if (r.deadLetters + r.abandonedExecutions > 0) logger.info(r, "retention pass");
      })
      .catch((err) => logger.error({ err }, "retention pass failed"));

  return {
    run,
    start() {
      if (timer) return;
      void safeRun();
      timer = clock.setInterval(() => void safeRun(), opts.everyMs ?? 3_600_000);
    },
    stop() {
      timer?.cancel();
      timer = null;
    },
  };
}
