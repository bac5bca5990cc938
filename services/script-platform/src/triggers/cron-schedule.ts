import { Cron } from "croner";

/** Seed: "Cron schedule: 6 fields" with an IANA time zone. Returns an error text or null. */
export function checkCronSchedule(
  schedule: string,
  timezone: string,
): { field: string; message: string } | null {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: timezone });
  } catch {
    return { field: "timezone", message: "timezone: not a known IANA time zone." };
  }
  try {
    const job = cronOf(schedule, timezone);
    if (job.nextRun(new Date(0)) === null) return { field: "schedule", message: "schedule: never fires." };
  } catch {
    return {
      field: "schedule",
      message: "schedule: must be a valid 6-field cron expression (second minute hour day month weekday).",
    };
  }
  return null;
}

function cronOf(schedule: string, timezone: string): Cron {
  return new Cron(schedule.trim(), { timezone, paused: true, mode: "6-part" });
}

/** The first fire time strictly after `afterMs`, or null if the schedule never fires again. */
export function nextFireMs(schedule: string, timezone: string, afterMs: number): number | null {
  const next = cronOf(schedule, timezone).nextRun(new Date(afterMs));
  return next ? next.getTime() : null;
}
