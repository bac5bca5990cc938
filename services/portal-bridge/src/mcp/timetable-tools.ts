import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { PortalError } from "../upstream/portal.js";
import { TimetableError } from "../upstream/timetable.js";
import { DEFAULT_LIMIT, decodeCursor, encodeCursor, MAX_LIMIT, richText, ToolInputError } from "./format.js";
import { addDays, dayLabel, daysBetween, nextSchoolDay, schoolWeek, weekdayOf } from "./time.js";
import type {
  DatedItem,
  GridDay,
  Holiday,
  ScheduleEntry,
  Target,
  TimetableService,
} from "./timetable-service.js";
import { type ToolContext, toolError } from "./tools.js";

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true };
const date = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "must be YYYY-MM-DD")
  .refine((s) => !Number.isNaN(Date.parse(`${s}T00:00:00Z`)), "must be a real date");

const studentInput = z
  .string()
  .trim()
  .min(1)
  .max(100)
  .optional()
  .describe(
    'parent accounts: the child\'s first name or id, or "all" (default: TIMETABLE_STUDENT, else every child)',
  );

const dated = z.object({
  kind: z.enum(["task", "homework", "exam"]),
  date: z.string(),
  weekday: z.string(),
  time: z.string().nullable(),
  end_time: z.string().nullable(),
  title: z.string(),
  subject: z.string().nullable(),
  detail: z.string().nullable(),
  completed: z.boolean().nullable(),
  student: z.string().nullable().optional(),
});

const byDate = (a: DatedItem, b: DatedItem) =>
  (a.date + (a.time ?? "")).localeCompare(b.date + (b.time ?? ""));

const pageInput = {
  limit: z.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT),
  cursor: z.string().max(200).optional(),
};

const pagedOutput = {
  student: z.string().nullable(),
  students: z.array(z.string()),
  errors: z.array(z.string()),
  from: z.string(),
  to: z.string(),
  items: z.array(dated),
  total: z.number().int(),
  next_cursor: z.string().nullable(),
  truncated: z.boolean(),
};

const entrySchema = z.object({
  student: z.string().nullable(),
  date: z.string(),
  weekday: z.string(),
  lesson: z.number().int().nullable(),
  start: z.string(),
  end: z.string(),
  subject: z.string().nullable(),
  subject_code: z.string().nullable(),
  teachers: z.array(z.string()),
  rooms: z.array(z.string()),
  classes: z.array(z.string()),
  original_teachers: z.array(z.string()),
  original_rooms: z.array(z.string()),
  cancelled: z.boolean(),
  substitution: z.boolean(),
  room_change: z.boolean(),
  lesson_text: z.string().nullable(),
  info: z.string().nullable(),
});

function range(today: string, from: string | undefined, to: string | undefined, defaultDays: number) {
  const start = from ?? today;
  const end = to ?? addDays(start, defaultDays);
  if (end < start) throw new ToolInputError("`to` must not be before `from`.");
  if (daysBetween(start, end) > 62) throw new ToolInputError("The range may span at most 62 days.");
  return { start, end };
}

/** One line per dated item; everything a parent would ask about, nothing repeated. */
export function itemLine(i: DatedItem): string {
  const when = i.time
    ? `${dayLabel(i.date)} ${i.time}${i.end_time ? `–${i.end_time}` : ""}`
    : dayLabel(i.date);
  const done =
    i.completed === true ? " [done]" : i.completed === false && i.kind !== "exam" ? " [not done]" : "";
  return `- ${when} ${i.kind}${i.subject ? ` ${i.subject}` : ""}: ${i.title}${i.detail ? ` (${i.detail})` : ""}${done}`;
}

function page(
  items: DatedItem[],
  limit: number,
  cursor: string | undefined,
  label: string,
  meta: { student: string | null; students: string[]; errors: string[]; from: string; to: string },
) {
  const skip = decodeCursor(cursor);
  const slice = items.slice(skip, skip + limit);
  const next = skip + slice.length < items.length ? encodeCursor(skip + slice.length) : null;
  const who =
    meta.students.length > 1
      ? ` for ${meta.students.join(" and ")}`
      : meta.student
        ? ` for ${meta.student}`
        : "";
  const span = `${dayLabel(meta.from)} to ${dayLabel(meta.to)}`;
  const head =
    items.length === 0
      ? `No ${label}${who} from ${span}.`
      : `${label[0]?.toUpperCase()}${label.slice(1)}${who}, ${span} (${skip + 1}-${skip + slice.length} of ${items.length}):`;
  return {
    structured: { ...meta, items: slice, total: items.length, next_cursor: next, truncated: next !== null },
    text:
      [head, ...(meta.students.length > 1 ? groupedLines(slice) : slice.map(itemLine))].join("\n") +
      (next ? `\n(truncated: more ${label}; call again with cursor "${next}")` : "") +
      failedText(meta.errors),
  };
}

/** Several children: one block per child, headed by the first name (portal tasks apart). */
function groupedLines(items: DatedItem[]): string[] {
  const groups = new Map<string, DatedItem[]>();
  for (const i of items) {
    const key = i.student ?? "";
    groups.set(key, [...(groups.get(key) ?? []), i]);
  }
  return [...groups].flatMap(([who, list]) => [`${who || "Portal"}:`, ...list.map(itemLine)]);
}

const failedText = (errors: string[]): string =>
  errors.length ? `\nPartial result; these sources failed: ${errors.join("; ")}` : "";

interface PerChild<T> {
  results: { who: string | null; value: T }[];
  errors: string[];
  /** Names of the children answered for (parent accounts). */
  students: string[];
  /** Top-level `student`: the one child's name, "all" for several, null for a student account. */
  student: string | null;
}

/**
 * Runs `fn` for every child the call covers (one for a student account). A child whose read
 * fails is named in `errors`; when every read fails, the first failure is the tool's error.
 */
export async function perChild<T>(
  ctx: ToolContext,
  student: string | undefined,
  fn: (t: Target) => Promise<T>,
): Promise<PerChild<T>> {
  const tt = ctx.timetable;
  if (!tt) throw new ToolInputError("The timetable is not configured.");
  const targets = await tt.targets(student);
  const parent = await tt.isParent();
  const settled = await Promise.allSettled(targets.map((t) => fn(t)));
  const results: PerChild<T>["results"] = [];
  const errors: string[] = [];
  let first: { err: unknown } | null = null;
  settled.forEach((r, i) => {
    const t = targets[i] as Target;
    if (r.status === "fulfilled") results.push({ who: whoOf(t, parent), value: r.value });
    else {
      first ??= { err: r.reason };
      logUnexpected(ctx, r.reason);
      errors.push(`${t.name}: ${errText(r.reason)}`);
    }
  });
  if (results.length === 0 && first) throw (first as { err: unknown }).err;
  const students = parent ? targets.map((t) => t.name) : [];
  return {
    results,
    errors,
    students,
    student: targets.length > 1 ? "all" : parent ? (targets[0]?.name ?? null) : null,
  };
}

function logUnexpected(ctx: ToolContext, err: unknown): void {
  if (!(err instanceof PortalError || err instanceof TimetableError || err instanceof ToolInputError))
    ctx.logger.error({ err_name: (err as Error)?.name }, "timetable read failed unexpectedly");
}

async function run(
  ctx: ToolContext,
  fn: () => Promise<{ structured: Record<string, unknown>; text: string }>,
): Promise<CallToolResult> {
  try {
    const out = await fn();
    return { content: [{ type: "text", text: out.text }], structuredContent: out.structured };
  } catch (err) {
    return toolError(err, ctx.logger);
  }
}

const join = (xs: string[]) => xs.join("/");

/** Compact: a week of a full timetable stays well under 4 KB. */
function entryLine(e: ScheduleEntry): string {
  const what = e.subject ?? "(no subject)";
  const where = e.rooms.length ? ` ${join(e.rooms)}` : "";
  const who = e.teachers.length ? ` ${join(e.teachers)}` : "";
  const changes = changeText(e);
  const n = e.lesson !== null ? `${e.lesson}. ` : "";
  return `${n}${e.start}–${e.end} ${what}${where}${who}${changes ? ` [${changes}]` : ""}${e.lesson_text ? ` (${e.lesson_text})` : ""}`;
}

/** What changed, as from → to. */
export function changeText(e: ScheduleEntry): string {
  const parts: string[] = [];
  if (e.cancelled) parts.push("CANCELLED");
  if (e.original_teachers.length)
    parts.push(`teacher ${join(e.original_teachers)} → ${join(e.teachers) || "none"}`);
  else if (e.substitution) parts.push("substitution");
  if (e.original_rooms.length) parts.push(`room ${join(e.original_rooms)} → ${join(e.rooms) || "none"}`);
  else if (e.room_change) parts.push("room change");
  if (e.info) parts.push(e.info);
  return parts.join("; ");
}

function changesText(
  changes: (ScheduleEntry & { change: string })[],
  start: string,
  end: string,
  who: string | null,
): string {
  const forWho = who ? ` for ${who}` : "";
  if (changes.length === 0)
    return `No cancellations, substitutions or room changes${forWho} from ${dayLabel(start)} to ${dayLabel(end)}.`;
  return [
    `${changes.length} change${changes.length === 1 ? "" : "s"}${forWho}, ${dayLabel(start)} to ${dayLabel(end)}:`,
    ...changes.map(
      (c) =>
        `- ${dayLabel(c.date)} ${c.lesson !== null ? `lesson ${c.lesson} ` : ""}(${c.start}–${c.end}) ${c.subject ?? "(no subject)"}: ${c.change}`,
    ),
  ].join("\n");
}

function scheduleText(periods: ScheduleEntry[], start: string, end: string, who: string | null): string {
  const forWho = who ? ` for ${who}` : "";
  if (periods.length === 0)
    return `No lessons${forWho} ${start === end ? `on ${dayLabel(start)}` : `from ${dayLabel(start)} to ${dayLabel(end)}`} (a holiday, a weekend, or nothing published yet).`;
  const changed = periods.filter((p) => p.cancelled || p.substitution || p.room_change).length;
  const lines = [
    `Timetable${forWho}, ${dayLabel(start)}${start === end ? "" : ` to ${dayLabel(end)}`}; ${changed} changed:`,
  ];
  let day = "";
  for (const p of periods) {
    if (p.date !== day) {
      day = p.date;
      lines.push(`${dayLabel(day)}:`);
    }
    lines.push(entryLine(p));
  }
  return lines.join("\n");
}

/** Only parent accounts name the child in answers; a student reads herself. */
const whoOf = (t: Target, parent: boolean): string | null => (parent ? t.name : null);

/** Timetable tools; registered only when all TIMETABLE_* variables are set. */
export function registerTimetableTools(server: McpServer, ctx: ToolContext): void {
  const tt = ctx.timetable;
  if (!tt) return;
  const time = ctx.time;
  registerCalendarTool(server, ctx, tt);

  server.registerTool(
    "get_schedule",
    {
      title: "Schedule",
      description:
        "Lessons of a day or week in school time (numbered lessons, subjects, rooms, teachers), with cancellations, substitutions and room changes (what changed, from → to).",
      inputSchema: {
        when: z
          .union([z.enum(["today", "tomorrow", "week"]), date])
          .optional()
          .describe(
            '"today", "tomorrow", "week" (Mon-Fri of this school week) or YYYY-MM-DD; default: the next school day',
          ),
        date: date.optional().describe("same as when=YYYY-MM-DD (older name)"),
        days: z
          .number()
          .int()
          .min(1)
          .max(14)
          .optional()
          .describe("number of days from the start (default 1)"),
        student: studentInput,
      },
      outputSchema: {
        student: z.string().nullable(),
        students: z.array(z.string()),
        errors: z.array(z.string()),
        start_date: z.string(),
        end_date: z.string(),
        periods: z.array(entrySchema),
      },
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const today = time.today(ctx.clock.now());
        const when = args.when ?? args.date;
        let start: string;
        let end: string;
        if (when === "week") ({ start, end } = schoolWeek(today));
        else {
          start =
            when === "today"
              ? today
              : when === "tomorrow"
                ? addDays(today, 1)
                : (when ?? nextSchoolDay(today));
          end = addDays(start, (args.days ?? 1) - 1);
        }
        if (when === "week" && args.days !== undefined) end = addDays(start, args.days - 1);
        const r = await perChild(ctx, args.student, (t) => tt.schedule(t, start, end));
        const periods = r.results.flatMap((c) => c.value.map((p) => ({ student: c.who, ...p })));
        return {
          structured: { ...childMeta(r), start_date: start, end_date: end, periods },
          text:
            r.results.map((c) => scheduleText(c.value, start, end, c.who)).join("\n\n") +
            failedText(r.errors),
        };
      }),
  );

  server.registerTool(
    "get_changes",
    {
      title: "Timetable changes",
      description:
        "Cancellations, substitutions and room changes in the coming days, each with what changed (from → to).",
      inputSchema: {
        days: z.number().int().min(1).max(14).default(7).describe("days ahead from today (default 7)"),
        student: studentInput,
      },
      outputSchema: {
        student: z.string().nullable(),
        students: z.array(z.string()),
        errors: z.array(z.string()),
        start_date: z.string(),
        end_date: z.string(),
        changes: z.array(entrySchema.extend({ change: z.string() })),
      },
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const start = time.today(ctx.clock.now());
        const end = addDays(start, args.days - 1);
        const r = await perChild(ctx, args.student, async (t) =>
          (await tt.schedule(t, start, end))
            .filter((p) => p.cancelled || p.substitution || p.room_change)
            .map((p) => ({ ...p, change: changeText(p) })),
        );
        const changes = r.results.flatMap((c) => c.value.map((p) => ({ student: c.who, ...p })));
        return {
          structured: { ...childMeta(r), start_date: start, end_date: end, changes },
          text:
            r.results.map((c) => changesText(c.value, start, end, c.who)).join("\n\n") + failedText(r.errors),
        };
      }),
  );

  server.registerTool(
    "list_homework",
    {
      title: "Homework",
      description:
        "Homework by due date (default: today to 14 days ahead), with subject, the full task text and whether it is done.",
      inputSchema: { from: date.optional(), to: date.optional(), student: studentInput, ...pageInput },
      outputSchema: pagedOutput,
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const { start, end } = range(time.today(ctx.clock.now()), args.from, args.to, 14);
        const r = await perChild(ctx, args.student, (t) => tt.homework(t, start, end));
        const items = r.results
          .flatMap((c) => c.value.map((i) => ({ ...i, student: c.who })))
          .filter((i) => i.date >= start && i.date <= end)
          .sort(byDate);
        return page(items, args.limit, args.cursor, "homework", metaOf(r, start, end));
      }),
  );

  server.registerTool(
    "list_exams",
    {
      title: "Exams",
      description:
        "Exams (default: today to 28 days ahead) with subject, start and end time, topic and room.",
      inputSchema: { from: date.optional(), to: date.optional(), student: studentInput, ...pageInput },
      outputSchema: pagedOutput,
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const { start, end } = range(time.today(ctx.clock.now()), args.from, args.to, 28);
        const r = await perChild(ctx, args.student, (t) => tt.exams(t, start, end));
        const items = r.results.flatMap((c) => c.value.map((i) => ({ ...i, student: c.who }))).sort(byDate);
        return page(items, args.limit, args.cursor, "exams", metaOf(r, start, end));
      }),
  );

  server.registerTool(
    "get_messages_of_day",
    {
      title: "Messages of the day",
      description: "The school's messages of the day (news from school) from the timetable service, as text.",
      inputSchema: { date: date.optional().describe("YYYY-MM-DD; default today (school time)") },
      outputSchema: {
        date: z.string(),
        weekday: z.string(),
        messages: z.array(
          z.object({ subject: z.string(), text: z.string(), attachments: z.array(z.string()) }),
        ),
      },
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const d = args.date ?? time.today(ctx.clock.now());
        const messages = (await tt.messagesOfDay(d)).map((m) => ({
          subject: m.subject,
          text: richText(m.body),
          attachments: m.attachments,
        }));
        return {
          structured: { date: d, weekday: dayLabel(d).slice(0, 3), messages },
          text:
            messages.length === 0
              ? `No messages of the day for ${dayLabel(d)}.`
              : [
                  `${messages.length} message${messages.length === 1 ? "" : "s"} of the day for ${dayLabel(d)}:`,
                  ...messages.map(
                    (m) =>
                      `## ${m.subject || "(no subject)"}\n${m.text}${m.attachments.length ? `\nAttachments: ${m.attachments.join(", ")}` : ""}`,
                  ),
                ].join("\n\n"),
        };
      }),
  );
}

/** Mon-Fri when the master data has no time grid. */
const DEFAULT_SCHOOL_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"];

/**
 * The current or next school day: a weekday with lessons in the grid, outside every holiday;
 * today counts until its last lesson has ended.
 */
export function schoolDayFrom(
  today: string,
  nowTime: string,
  cal: { holidays: Holiday[]; grid: GridDay[] },
): { date: string; weekday: string; is_today: boolean; periods: GridDay["periods"] } | null {
  for (let i = 0; i < 120; i++) {
    const d = addDays(today, i);
    const weekday = weekdayOf(d);
    const gridDay = cal.grid.find((g) => g.weekday === weekday);
    const teaches =
      cal.grid.length > 0 ? (gridDay?.periods.length ?? 0) > 0 : DEFAULT_SCHOOL_DAYS.includes(weekday);
    if (!teaches || cal.holidays.some((h) => h.first_day <= d && d <= h.last_day)) continue;
    const periods = gridDay?.periods ?? [];
    const lastEnd = periods.at(-1)?.end;
    if (i === 0 && lastEnd && nowTime >= lastEnd) continue;
    return { date: d, weekday, is_today: i === 0, periods };
  }
  return null;
}

const childMeta = (r: PerChild<unknown>) => ({ student: r.student, students: r.students, errors: r.errors });
const metaOf = (r: PerChild<unknown>, from: string, to: string) => ({ ...childMeta(r), from, to });

/** The school calendar: holidays ahead, the time grid, the current or next school day. */
function registerCalendarTool(server: McpServer, ctx: ToolContext, tt: TimetableService): void {
  const period = z.object({ lesson: z.number().int(), start: z.string(), end: z.string() });
  server.registerTool(
    "get_school_calendar",
    {
      title: "School calendar",
      description:
        "Holidays ahead (name, first and last day), the time grid (when each lesson starts and ends, per weekday) and the current or next school day, from the timetable's master data.",
      inputSchema: { student: studentInput },
      outputSchema: {
        today: z.string(),
        now: z.string(),
        holidays: z.array(z.object({ name: z.string(), first_day: z.string(), last_day: z.string() })),
        time_grid: z.array(z.object({ weekday: z.string(), periods: z.array(period) })),
        school_day: z
          .object({ date: z.string(), weekday: z.string(), is_today: z.boolean(), periods: z.array(period) })
          .nullable(),
        current_lesson: period.nullable(),
        next_lesson: period.nullable(),
      },
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        // The grid and holidays are the school's; a named child is still checked.
        if (args.student) await tt.targets(args.student);
        const cal = await tt.calendar();
        const stamp = ctx.time.stamp(ctx.clock.now());
        const today = stamp.date;
        const now = stamp.time ?? "00:00";
        const holidays = cal.holidays.filter((h) => h.last_day >= today);
        const day = schoolDayFrom(today, now, cal);
        const current = day?.is_today
          ? (day.periods.find((p) => p.start <= now && now < p.end) ?? null)
          : null;
        const next = day
          ? day.is_today
            ? (day.periods.find((p) => p.start > now) ?? null)
            : (day.periods[0] ?? null)
          : null;
        const lines: string[] = [];
        if (day)
          lines.push(
            day.is_today
              ? `Today, ${dayLabel(day.date)}, is a school day${current ? `; now lesson ${current.lesson} (${current.start}–${current.end})` : ""}${next ? `; next lesson ${next.lesson} at ${next.start}` : ""}.`
              : `Next school day: ${dayLabel(day.date)}${next ? `, first lesson at ${next.start}` : ""}.`,
          );
        else lines.push("No school day found in the next 120 days.");
        const ongoing = holidays.find((h) => h.first_day <= today);
        if (ongoing) lines.push(`Holiday now: ${ongoing.name} until ${dayLabel(ongoing.last_day)}.`);
        lines.push(
          holidays.length
            ? `Holidays ahead:\n${holidays
                .slice(0, 12)
                .map(
                  (h) =>
                    `- ${h.name}: ${h.first_day === h.last_day ? dayLabel(h.first_day) : `${dayLabel(h.first_day)} to ${dayLabel(h.last_day)}`}`,
                )
                .join("\n")}`
            : "No holidays ahead in the timetable's master data.",
        );
        lines.push(gridText(cal.grid));
        return {
          structured: {
            today,
            now,
            holidays,
            time_grid: cal.grid,
            school_day: day,
            current_lesson: current,
            next_lesson: next,
          },
          text: lines.join("\n"),
        };
      }),
  );
}

/** Weekdays with the same lessons share a line: "Mon-Thu: 1. 08:00–08:45, …". */
function gridText(grid: GridDay[]): string {
  if (grid.length === 0) return "The timetable's master data has no time grid.";
  const groups: { days: string[]; text: string }[] = [];
  for (const g of grid) {
    const text = g.periods.map((p) => `${p.lesson}. ${p.start}–${p.end}`).join(", ");
    const last = groups.at(-1);
    if (last && last.text === text) last.days.push(g.weekday.slice(0, 3));
    else groups.push({ days: [g.weekday.slice(0, 3)], text });
  }
  return `Time grid:\n${groups
    .map(
      (g) =>
        `- ${g.days.length > 1 ? `${g.days[0]}-${g.days.at(-1)}` : g.days[0]}: ${g.text || "no lessons"}`,
    )
    .join("\n")}`;
}

const errText = (err: unknown): string =>
  err instanceof PortalError || err instanceof TimetableError || err instanceof ToolInputError
    ? err.message
    : "failed";

/** Portal tasks, plus timetable homework and exams when the timetable is configured. */
export function registerDeadlinesTool(server: McpServer, ctx: ToolContext): void {
  const tt = ctx.timetable;
  const time = ctx.time;
  server.registerTool(
    "upcoming_deadlines",
    {
      title: "Upcoming deadlines",
      description:
        "What is due in the next days (school time): open portal tasks, plus timetable homework and exams when configured, merged and sorted. Names any source that failed.",
      inputSchema: {
        days: z.number().int().min(1).max(62).default(14),
        ...(tt ? { student: studentInput } : {}),
        ...pageInput,
      },
      outputSchema: pagedOutput,
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const start = time.today(ctx.clock.now());
        const end = addDays(start, args.days);
        const errors: string[] = [];
        const sources: Promise<DatedItem[]>[] = [];
        const settle = async (label: string, p: () => Promise<DatedItem[]>) => {
          try {
            return await p();
          } catch (err) {
            if (
              !(err instanceof PortalError || err instanceof TimetableError || err instanceof ToolInputError)
            )
              ctx.logger.error({ err_name: (err as Error)?.name }, "deadline source failed unexpectedly");
            errors.push(`${label}: ${errText(err)}`);
            return [];
          }
        };
        // An unconfigured portal is not a failed source when the timetable answers instead.
        if (ctx.portal.configured || !tt)
          sources.push(
            settle("Portal tasks", async () => {
              const r = await ctx.portal.getJson<{ data?: Record<string, unknown>[] }>("/api/v3/tasks", {
                skip: 0,
                limit: 100,
              });
              return (r?.data ?? []).flatMap((t) => {
                const due = time.portalTime(t.dueDate);
                if (!due) return [];
                const desc = richText(t.description, 200).replace(/\n+/g, " ");
                return [
                  {
                    kind: "task" as const,
                    date: due.date,
                    weekday: due.weekday,
                    time: due.time,
                    end_time: null,
                    title: String(t.name ?? "Task"),
                    subject: typeof t.courseName === "string" ? t.courseName : null,
                    detail: desc || null,
                    completed: null,
                  },
                ];
              });
            }),
          );
        // Every child's homework and exams (or the one named); a failed child is a failed source.
        let meta = { student: null as string | null, students: [] as string[] };
        let timetableFailed = false;
        let childrenRead = 0;
        if (tt) {
          try {
            const r = await perChild(ctx, args.student as string | undefined, async (t) => {
              const [hw, ex] = await Promise.allSettled([
                tt.homework(t, start, end),
                tt.exams(t, start, end),
              ]);
              const failed = [hw, ex].flatMap((x, i) =>
                x.status === "rejected"
                  ? [`${i === 0 ? "Homework" : "Exams"} (${t.name}): ${errText(x.reason)}`]
                  : [],
              );
              errors.push(...failed);
              if (failed.length < 2) childrenRead += 1;
              return [hw, ex].flatMap((x) => (x.status === "fulfilled" ? x.value : []));
            });
            meta = { student: r.student, students: r.students };
            timetableFailed = childrenRead === 0;
            errors.push(...r.errors.map((e) => `Timetable (${e})`));
            sources.push(
              Promise.resolve(r.results.flatMap((c) => c.value.map((i) => ({ ...i, student: c.who })))),
            );
          } catch (err) {
            // A child named that does not exist is the caller's to fix, not a failed source.
            if (err instanceof ToolInputError) throw err;
            timetableFailed = true;
            errors.push(`Timetable (homework and exams): ${errText(err)}`);
          }
        }
        const lists = await Promise.all(sources);
        const portalFailed = errors.some((e) => e.startsWith("Portal tasks"));
        const portalTried = ctx.portal.configured || !tt;
        if ((!portalTried || portalFailed) && (!tt || timetableFailed))
          throw new ToolInputError(
            `Every deadline source failed, so nothing can be said about deadlines: ${errors.join("; ") || "no source is configured"}`,
          );
        const items = lists
          .flat()
          .filter((i) => i.date >= start && i.date <= end && i.completed !== true)
          .sort(byDate);
        return page(items, args.limit, args.cursor, "deadlines", { ...meta, errors, from: start, to: end });
      }),
  );
}
