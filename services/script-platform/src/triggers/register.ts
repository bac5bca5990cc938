import type { ServiceProvider, WorkerFactory } from "../context.js";
import { createCronScheduler } from "../dispatch/cron.js";
import { settleHandledDeadLetters } from "../dispatch/dead-letters.js";
import { createRetentionJob } from "../dispatch/retention.js";
import { createRealtimeHub, type RealtimeHub } from "../realtime/hub.js";
import { configureTriggerRuntime, triggerRuntime } from "./runtime-config.js";
import { triggerSettings } from "./settings.js";

declare module "../context.js" {
  interface PlatformServices {
    /** Fan-out of committed publishDurable messages to this process's SSE subscribers. */
    realtime: RealtimeHub;
  }
}

/** Installs the dispatch seams' runtime (clock, dialect, settings) and the realtime hub. */
export const triggersProvider: ServiceProvider = (ctx) => {
  configureTriggerRuntime({
    clock: ctx.clock,
    logger: ctx.logger,
    dialect: ctx.database.dialect,
    settings: triggerSettings(ctx.config),
    // The runtime's provider registers after this one; look it up when a row is enqueued.
    wakeDispatcher: () =>
      (ctx.services as { runtime?: { dispatcher: { wake(): void } } }).runtime?.dispatcher.wake(),
  });
  ctx.services.realtime = createRealtimeHub({ database: ctx.database, clock: ctx.clock, logger: ctx.logger });
};

export const realtimeWorker: WorkerFactory = (ctx) => ({
  name: "realtime",
  start: () => ctx.services.realtime.start(),
  stop: () => ctx.services.realtime.stop(),
});

export const cronWorker: WorkerFactory = (ctx) => {
  const s = createCronScheduler({ database: ctx.database, clock: ctx.clock, logger: ctx.logger });
  return { name: "cron", start: () => s.start(), stop: () => s.stop() };
};

export const retentionWorker: WorkerFactory = (ctx) => {
  const job = createRetentionJob({
    database: ctx.database,
    clock: ctx.clock,
    logger: ctx.logger,
    settings: triggerRuntime().settings,
  });
  return { name: "retention", start: () => job.start(), stop: () => job.stop() };
};

/** Resolves dead letters whose dead_letter handler runs have all finished (every second). */
export const deadLetterSettlerWorker: WorkerFactory = (ctx) => {
  let timer: { cancel(): void } | null = null;
  let busy = false;
  const run = async () => {
    if (busy) return;
    busy = true;
    try {
      await settleHandledDeadLetters(ctx.database, ctx.clock.iso());
    } catch (err) {
      ctx.logger.error({ err }, "dead-letter settle failed");
    } finally {
      busy = false;
    }
  };
  return {
    name: "dead-letter-settler",
    start() {
      timer ??= ctx.clock.setInterval(() => void run(), 1000);
    },
    stop() {
      timer?.cancel();
      timer = null;
    },
  };
};
