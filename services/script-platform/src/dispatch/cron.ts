import type { Clock, TimerHandle } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { PlatformDB } from "../db/schema.js";
import { nextFireMs } from "../triggers/cron-schedule.js";
import { anyCronDue, claimDueCron, markCronFired } from "../triggers/repository.js";
import type { OutboxWriter } from "./enqueue.js";

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
  outbox: OutboxWriter;
  tickMs?: number;
}): CronScheduler {
  const { database, clock, logger, outbox } = opts;
  let timer: TimerHandle | null = null;
  let running: Promise<number> | null = null;

  async function pass(): Promise<number> {
    const now = clock.now();
    const nowIso = toIso(now);
    if (!(await anyCronDue(database.db, nowIso))) return 0;
    return database.writeTx(async (trx) => {
      const due = await claimDueCron(trx, database.dialect, nowIso, BATCH);
      for (const t of due) {
        await outbox.enqueue(trx, {
          appId: t.app_id,
          sourceKind: "cron",
          triggerId: t.id,
          scriptId: t.script_id,
          event: {
            cron: {
              trigger_id: t.id,
              schedule: t.schedule,
              timezone: t.timezone,
              scheduled_at: t.scheduled_at,
              fired_at: nowIso,
            },
          },
          depth: 0,
          principal: t.principal,
          dueAt: nowIso,
          now: nowIso,
        });
        const next = nextFireMs(t.schedule, t.timezone, now);
        await markCronFired(trx, t.id, nowIso, next === null ? null : toIso(next));
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
