import type { Clock } from "@app/kit/clock";
import { systemClock } from "@app/kit/clock";
import { Dialect } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import { DEFAULT_TRIGGER_SETTINGS, type TriggerSettings } from "./settings.js";

/**
 * What the dispatch seams (emitChangeEvent, emitPubsub, onRunFailed) need besides the
 * transaction they are handed: time, the backend's dialect, settings and a logger. Their
 * signatures carry only (trx, event), so buildApp installs this once per process
 * (registerTriggers); app instances in one process share it.
 */
export interface TriggerRuntime {
  clock: Clock;
  logger: Logger | null;
  dialect: Dialect;
  settings: TriggerSettings;
  /** Wakes this process's outbox dispatcher (SQLite; on PostgreSQL a NOTIFY at commit does it). */
  wakeDispatcher?: () => void;
}

let current: TriggerRuntime = {
  clock: systemClock,
  logger: null,
  dialect: new Dialect("sqlite"),
  settings: DEFAULT_TRIGGER_SETTINGS,
};

export function configureTriggerRuntime(rt: TriggerRuntime): void {
  current = rt;
}

export function triggerRuntime(): TriggerRuntime {
  return current;
}
