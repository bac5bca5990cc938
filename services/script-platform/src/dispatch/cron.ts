import type { Clock, TimerHandle } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { PlatformDB } from "../db/schema.js";
import { nextFireMs } from "../triggers/cron-schedule.js";
import { enqueueTriggeredRun } from "../triggers/enqueue.js";

/**
 * Cron scheduler: every tick, each enabled cron trigger whose next_due_at has passed gets ONE
 * outbox row and its next_due_at moves to the first fire time after now. After downtime a
 * trigger therefore fires once, not once per missed window (seed: "fires once per tick").
 * Due rows are claimed with skip-locked semantics, so several instances on one PostgreSQL
 * database never fire the same window twice.
 */
export interface CronScheduler {
  start(): void;
  stop(): void;
  /** One pass; returns how many triggers fired. */
  tick(): Promise<number>;
}

const BATCH = 100;

export function createCronScheduler(opts: {
  database: Database<PlatformDB>;
  clock: Clock;
  logger: Logger;
  tickMs?: number;
}): CronScheduler {
  const { database, clock, logger } = opts;
  let timer: TimerHandle | null = null;
  let running: Promise<number> | null = null;

  const dueQuery = (db: typeof database.db, now: string) =>
    db
      .selectFrom("trigger_details as d")
      .innerJoin("triggers as t", "t.id", "d.trigger_id")
      .where("t.kind", "=", "cron")
      .where("t.enabled", "=", 1)
      .where("d.cron_next_due_at", "is not", null)
      .where("d.cron_next_due_at", "<=", now);

  async function pass(): Promise<number> {
    const now = clock.now();
    const nowIso = toIso(now);
    // A read first: the common case (nothing due) takes no write lock.
    const any = await dueQuery(database.db, nowIso).select("d.trigger_id").limit(1).executeTakeFirst();
    if (!any) return 0;
    return database.writeTx(async (trx) => {
      const due = await database.dialect
        .forUpdateSkipLocked(
          dueQuery(trx, nowIso)
            .select([
              "t.id",
              "t.app_id",
              "t.script_id",
              "t.registered_by_principal",
              "d.cron_schedule",
              "d.cron_timezone",
              "d.cron_next_due_at",
            ])
            .orderBy("d.cron_next_due_at")
            .limit(BATCH),
        )
        .execute();
      for (const t of due) {
        const schedule = t.cron_schedule ?? "";
        const timezone = t.cron_timezone ?? "UTC";
        await enqueueTriggeredRun(trx, database.dialect, {
          appId: t.app_id,
          sourceKind: "cron",
          triggerId: t.id,
          scriptId: t.script_id,
          event: {
            cron: {
              trigger_id: t.id,
              schedule,
              timezone,
              scheduled_at:
                t.cron_next_due_at === null ? null : database.dialect.fromTimestamp(t.cron_next_due_at),
              fired_at: nowIso,
            },
          },
          depth: 0,
          principal: database.dialect.fromJson(t.registered_by_principal),
          dueAt: nowIso,
          now: nowIso,
        });
        const next = nextFireMs(schedule, timezone, now);
        await trx
          .updateTable("trigger_details")
          .set({ cron_last_fired_at: nowIso, cron_next_due_at: next === null ? null : toIso(next) })
          .where("trigger_id", "=", t.id)
          .execute();
      }
      return due.length;
    });
  }

  /** A fresh pass that starts after any pass in flight (timer ticks skip while one runs). */
  function tick(): Promise<number> {
    const next = (running ?? Promise.resolve(0)).then(pass).catch((err) => {
      logger.error({ err }, "cron tick failed");
      return 0;
    });
    running = next;
    void next.finally(() => {
      if (running === next) running = null;
    });
    return next;
  }

  return {
    start() {
      timer ??= clock.setInterval(() => {
        if (!running) void tick();
      }, opts.tickMs ?? 1000);
    },
    stop() {
      timer?.cancel();
      timer = null;
    },
    tick,
  };
}
