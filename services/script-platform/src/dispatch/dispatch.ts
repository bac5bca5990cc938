import type { Clock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { PlatformDB } from "../db/schema.js";
import type { EventSink } from "../sdk/types.js";
import type { TriggerSettings } from "../triggers/settings.js";
import { createChangeEvents } from "./change-events.js";
import { type CronScheduler, createCronScheduler } from "./cron.js";
import { createDeadLetterSettler } from "./dead-letters.js";
import { createOutboxWriter, type LocalRuns, type OutboxWriter } from "./enqueue.js";
import { createFailurePolicy, type FailurePolicy } from "./failure-policy.js";
import { createRetentionJob } from "./retention.js";

export interface DispatchDeps {
  database: Database<PlatformDB>;
  clock: Clock;
  logger: Logger;
  settings: TriggerSettings;
  /**
   * Wakes this app's outbox dispatcher when a row is written here (SQLite; on PostgreSQL a
   * NOTIFY at commit wakes every instance). The dispatcher is built after this object, so
   * buildApp passes a function that reaches it once it exists.
   */
  wake: () => void;
  /** This app's dispatcher once it exists, for runs it starts itself as they are written. */
  local?: () => LocalRuns | null;
}

/** Background work of the dispatch capability, started after the routes and stopped before close. */
export interface DispatchWorkers {
  cron: CronScheduler;
  retention: { start(): void; stop(): void };
  deadLetterSettler: { start(): void; stop(): void };
}

/**
 * The dispatch capability of one app instance: how triggered runs reach the outbox (with this
 * instance's clock and dialect, never another's), what happens when a run fails, dead letters,
 * cron and retention. The outbox dispatcher that drains the rows is built with the runtime.
 */
export interface Dispatch {
  settings: TriggerSettings;
  outbox: OutboxWriter;
  /** Change and pubsub events of data writes (the SDK's and the admin files view's). */
  events: EventSink;
  failures: FailurePolicy;
  workers: DispatchWorkers;
}

export function createDispatch(deps: DispatchDeps): Dispatch {
  const { database, clock, logger, settings } = deps;
  const dialect = database.dialect;
  const outbox = createOutboxWriter({
    dialect,
    wake: deps.wake,
    ...(deps.local ? { local: deps.local } : {}),
  });
  return {
    settings,
    outbox,
    events: createChangeEvents({ clock, database, logger, maxDepth: settings.maxDepth, outbox }),
    failures: createFailurePolicy({ clock, dialect, defaults: settings.retry, outbox }),
    workers: {
      cron: createCronScheduler({ database, clock, logger, outbox }),
      retention: createRetentionJob({ database, clock, logger, settings }),
      deadLetterSettler: createDeadLetterSettler({ database, clock, logger }),
    },
  };
}
