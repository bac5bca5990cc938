/**
 * DIGEST_SCHEDULE: a comma list of `HH:MM` local times (SCHOOL_TIMEZONE), each optionally
 * prefixed by weekdays: a day (`Sun`), a range (`Mon-Fri`, wrapping: `Sun-Thu`, `Fri-Mon`).
 * Example: `Mon-Fri 06:45,Sun-Thu 18:00`. Without days an entry runs every day.
 */
const DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

export interface DigestTime {
  /** 0 = Sunday … 6 = Saturday */
  days: Set<number>;
  hour: number;
  minute: number;
}

export class ScheduleError extends Error {}

function dayIndex(s: string): number {
  const i = DAYS.indexOf(s.trim().toLowerCase().slice(0, 3));
  if (i < 0 || s.trim().length < 3) throw new ScheduleError(`"${s}" is not a weekday (Mon … Sun)`);
  return i;
}

export function parseDigestSchedule(spec: string): DigestTime[] {
  const out: DigestTime[] = [];
  for (const raw of spec.split(",")) {
    const part = raw.trim();
    if (part === "") continue;
    const m = /^(?:([A-Za-z]{3,9})(?:\s*-\s*([A-Za-z]{3,9}))?\s+)?(\d{1,2}):(\d{2})$/.exec(part);
    if (!m) throw new ScheduleError(`"${part}" is not "HH:MM" or "Mon-Fri HH:MM"`);
    const hour = Number(m[3]);
    const minute = Number(m[4]);
    if (hour > 23 || minute > 59) throw new ScheduleError(`"${part}" is not a time of day`);
    const days = new Set<number>();
    if (!m[1]) for (let d = 0; d < 7; d++) days.add(d);
    else {
      const from = dayIndex(m[1]);
      const to = m[2] ? dayIndex(m[2]) : from;
      for (let d = from; ; d = (d + 1) % 7) {
        days.add(d);
        if (d === to) break;
      }
    }
    out.push({ days, hour, minute });
  }
  if (out.length === 0) throw new ScheduleError("no time given");
  return out;
}

/** Offset of `zone` from UTC at instant `ms`, in ms (local = utc + offset). */
function zoneOffset(ms: number, zone: string): number {
  const parts: Record<string, number> = {};
  for (const p of new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    hourCycle: "h23",
    year: "numeric",
    month: "numeric",
    day: "numeric",
    hour: "numeric",
    minute: "numeric",
    second: "numeric",
  }).formatToParts(ms))
    if (p.type !== "literal") parts[p.type] = Number(p.value);
  const asUtc = Date.UTC(
    parts.year ?? 1970,
    (parts.month ?? 1) - 1,
    parts.day ?? 1,
    parts.hour ?? 0,
    parts.minute ?? 0,
    parts.second ?? 0,
  );
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/** The instant of a local wall-clock time in `zone` (the later one across a DST change). */
function localToInstant(y: number, mo: number, d: number, h: number, mi: number, zone: string): number {
  const wall = Date.UTC(y, mo, d, h, mi);
  let guess = wall - zoneOffset(wall, zone);
  guess = wall - zoneOffset(guess, zone);
  return guess;
}

/** The first scheduled instant strictly after `afterMs`. */
export function nextDigestAt(times: DigestTime[], afterMs: number, zone: string): number {
  const base = new Date(afterMs + zoneOffset(afterMs, zone)); // local calendar via UTC getters
  let best = Number.POSITIVE_INFINITY;
  for (let i = 0; i <= 7; i++) {
    const day = new Date(Date.UTC(base.getUTCFullYear(), base.getUTCMonth(), base.getUTCDate() + i));
    for (const t of times) {
      if (!t.days.has(day.getUTCDay())) continue;
      const at = localToInstant(
        day.getUTCFullYear(),
        day.getUTCMonth(),
        day.getUTCDate(),
        t.hour,
        t.minute,
        zone,
      );
      if (at > afterMs && at < best) best = at;
    }
    if (best !== Number.POSITIVE_INFINITY && i > 0) break;
  }
  return best;
}
