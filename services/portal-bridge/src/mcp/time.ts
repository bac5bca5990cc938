/**
 * School-local time (SCHOOL_TIMEZONE). Parents think in the school's days: "today", "tomorrow"
 * and every date the tools show are local, with weekday names. Two kinds of upstream times:
 *  - the portal sends real instants (ISO with Z or an offset): converted to local time;
 *  - WebUntis' mobile API sends wall-clock times with a literal "Z" ("2026-11-24T08:00Z" means
 *    08:00 at school, as the public clients parse it): taken as they are, never shifted.
 */
const DAY_MS = 86_400_000;
const WEEKDAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

export interface LocalStamp {
  /** YYYY-MM-DD (local) */
  date: string;
  /** HH:MM (local), null for a date without a time */
  time: string | null;
  weekday: string;
}

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;

/** Date arithmetic on YYYY-MM-DD strings (calendar days, no zone involved). */
export function addDays(ymd: string, days: number): string {
  return new Date(Date.parse(`${ymd}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);
}

/** Whole days from a to b (both YYYY-MM-DD). */
export function daysBetween(a: string, b: string): number {
  return Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / DAY_MS);
}

export function weekdayOf(ymd: string): string {
  return WEEKDAYS[new Date(`${ymd}T00:00:00Z`).getUTCDay()] ?? "";
}

/** "Tue 2026-11-24" */
export function dayLabel(ymd: string): string {
  return `${weekdayOf(ymd).slice(0, 3)} ${ymd}`;
}

/** A WebUntis date: "2026-11-24" or 20261124 → "2026-11-24"; null when unreadable. */
export function untisDate(v: unknown): string | null {
  const s = typeof v === "number" ? String(v) : typeof v === "string" ? v.trim() : "";
  if (/^\d{8}$/.test(s)) return `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6, 8)}`;
  const d = s.slice(0, 10);
  return DATE_RE.test(d) ? d : null;
}

/** A WebUntis wall-clock date-time ("2026-11-24T08:00Z") → local stamp, without shifting. */
export function untisDateTime(v: unknown): LocalStamp | null {
  if (typeof v !== "string") return null;
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})/.exec(v.trim());
  if (!m?.[1]) return null;
  return { date: m[1], time: `${m[2]}:${m[3]}`, weekday: weekdayOf(m[1]) };
}

/** A WebUntis time of day: "T08:00", "08:00" or 800 → "08:00". */
export function untisTime(v: unknown): string | null {
  if (typeof v === "number" && Number.isInteger(v) && v >= 0 && v < 2400) {
    const s = String(v).padStart(4, "0");
    return `${s.slice(0, 2)}:${s.slice(2)}`;
  }
  if (typeof v !== "string") return null;
  const m = /^T?(\d{1,2}):(\d{2})/.exec(v.trim());
  return m?.[1] ? `${m[1].padStart(2, "0")}:${m[2]}` : null;
}

export class SchoolTime {
  private readonly fmt: Intl.DateTimeFormat;

  constructor(readonly zone: string) {
    this.fmt = new Intl.DateTimeFormat("en-CA", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    });
  }

  /** Local stamp of an instant (epoch ms). */
  stamp(ms: number): LocalStamp {
    const parts: Record<string, string> = {};
    for (const p of this.fmt.formatToParts(ms)) parts[p.type] = p.value;
    const date = `${parts.year}-${parts.month}-${parts.day}`;
    return { date, time: `${parts.hour}:${parts.minute}`, weekday: weekdayOf(date) };
  }

  today(nowMs: number): string {
    return this.stamp(nowMs).date;
  }

  /**
   * A portal time (a real instant) → local stamp; a bare date stays that date. Null when the
   * value is not a time.
   */
  portalTime(v: unknown): LocalStamp | null {
    if (typeof v !== "string" || v === "") return null;
    if (DATE_RE.test(v)) return { date: v, time: null, weekday: weekdayOf(v) };
    const ms = Date.parse(v);
    return Number.isNaN(ms) ? null : this.stamp(ms);
  }

  /** "Tue 2026-11-24 23:00" for an instant (used in text renderings). */
  label(ms: number): string {
    const s = this.stamp(ms);
    return `${dayLabel(s.date)} ${s.time}`;
  }
}

/** "Tue 2026-11-24 08:00" / "Tue 2026-11-24" */
export function stampLabel(s: { date: string; time: string | null }): string {
  return s.time ? `${dayLabel(s.date)} ${s.time}` : dayLabel(s.date);
}

/** Today if it is a school day (Mon-Fri), else the coming Monday. */
export function nextSchoolDay(today: string): string {
  const wd = new Date(`${today}T00:00:00Z`).getUTCDay();
  return wd === 6 ? addDays(today, 2) : wd === 0 ? addDays(today, 1) : today;
}

/** Monday-Friday of the school week holding `today` (on a weekend: the coming week). */
export function schoolWeek(today: string): { start: string; end: string } {
  const start = nextSchoolDay(today);
  const wd = new Date(`${start}T00:00:00Z`).getUTCDay(); // 1..5
  const monday = addDays(start, 1 - wd);
  return { start: monday, end: addDays(monday, 4) };
}
