import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import {
  DEFAULT_LIMIT,
  decodeCursor,
  encodeCursor,
  htmlToText,
  MAX_LIMIT,
  ToolInputError,
} from "./format.js";
import { type DatedItem, type ScheduleEntry, ymd } from "./timetable-service.js";
import { type ToolContext, toolError } from "./tools.js";

const READ_ONLY = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: true };
const DAY = 86_400_000;
const date = z
  .string()
  .regex(/^\d{4}-\d{2}-\d{2}$/, "must be YYYY-MM-DD")
  .refine((s) => !Number.isNaN(Date.parse(`${s}T00:00:00Z`)), "must be a real date");

const dated = z.object({
  kind: z.enum(["task", "homework", "exam"]),
  date: z.string(),
  title: z.string(),
  subject: z.string().nullable(),
  detail: z.string().nullable(),
});

/** Sort key: the portal sends full ISO times, the timetable "YYYY-MM-DDTHH:mmZ" or a bare date. */
const timeOf = (d: string): number => {
  const t = Date.parse(d);
  return Number.isNaN(t) ? 0 : t;
};
const byDate = (a: DatedItem, b: DatedItem) => timeOf(a.date) - timeOf(b.date);

const pageInput = {
  limit: z.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT),
  cursor: z.string().max(200).optional(),
};

const pagedOutput = {
  items: z.array(dated),
  total: z.number().int(),
  next_cursor: z.string().nullable(),
  truncated: z.boolean(),
};

/** Today if it is a weekday, else the coming Monday (UTC dates). */
export function nextSchoolDay(nowMs: number): string {
  const day = new Date(nowMs).getUTCDay();
  const add = day === 6 ? 2 : day === 0 ? 1 : 0;
  return ymd(nowMs + add * DAY);
}

function range(nowMs: number, from: string | undefined, to: string | undefined, defaultDays: number) {
  const start = from ?? ymd(nowMs);
  const end = to ?? ymd(Date.parse(`${start}T00:00:00Z`) + defaultDays * DAY);
  if (end < start) throw new ToolInputError("`to` must not be before `from`.");
  if (Date.parse(`${end}T00:00:00Z`) - Date.parse(`${start}T00:00:00Z`) > 62 * DAY)
    throw new ToolInputError("The range may span at most 62 days.");
  return { start, end };
}

function page(items: DatedItem[], limit: number, cursor: string | undefined, label: string) {
  const skip = decodeCursor(cursor);
  const slice = items.slice(skip, skip + limit);
  const next = skip + slice.length < items.length ? encodeCursor(skip + slice.length) : null;
  const lines = slice.map(
    (i) => `- ${i.date.slice(0, 16)} ${i.kind}: ${i.title}${i.subject ? ` (${i.subject})` : ""}`,
  );
  const head =
    items.length === 0 ? `No ${label}.` : `${label} ${skip + 1}-${skip + slice.length} of ${items.length}:`;
  return {
    structured: { items: slice, total: items.length, next_cursor: next, truncated: next !== null },
    text:
      [head, ...lines].join("\n") +
      (next ? `\n(truncated: more ${label}; call again with cursor "${next}")` : ""),
  };
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

const describeEntry = (e: ScheduleEntry) => {
  const flags = [
    e.cancelled && "CANCELLED",
    e.substitution && "substitution",
    e.room_change && "room change",
  ].filter(Boolean);
  return `- ${e.start.slice(0, 16)}–${e.end.slice(11, 16)} ${e.subject ?? "?"} ${e.rooms.join("/")} ${e.teachers.join("/")}${flags.length ? ` [${flags.join(", ")}]` : ""}${e.info ? ` – ${e.info}` : ""}`;
};

/** Timetable tools; registered only when all TIMETABLE_* variables are set. */
export function registerTimetableTools(server: McpServer, ctx: ToolContext): void {
  const tt = ctx.timetable;
  if (!tt) return;

  server.registerTool(
    "get_schedule",
    {
      title: "Schedule",
      description:
        "Timetable periods (default: the next school day), flagging cancellations, substitutions and room changes.",
      inputSchema: {
        date: date.optional().describe("YYYY-MM-DD; default the next school day"),
        days: z.number().int().min(1).max(14).default(1),
        element: z
          .enum(["me"])
          .optional()
          .describe("whose timetable; only the account's own (me) is supported"),
      },
      outputSchema: {
        start_date: z.string(),
        end_date: z.string(),
        periods: z.array(
          z.object({
            start: z.string(),
            end: z.string(),
            subject: z.string().nullable(),
            teachers: z.array(z.string()),
            rooms: z.array(z.string()),
            classes: z.array(z.string()),
            cancelled: z.boolean(),
            substitution: z.boolean(),
            room_change: z.boolean(),
            info: z.string().nullable(),
          }),
        ),
      },
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const start = args.date ?? nextSchoolDay(ctx.clock.now());
        const end = ymd(Date.parse(`${start}T00:00:00Z`) + (args.days - 1) * DAY);
        const periods = await tt.schedule(start, end);
        const changes = periods.filter((p) => p.cancelled || p.substitution || p.room_change).length;
        return {
          structured: { start_date: start, end_date: end, periods },
          text:
            periods.length === 0
              ? `No periods from ${start} to ${end}.`
              : [
                  `${periods.length} periods from ${start} to ${end} (${changes} changed):`,
                  ...periods.map(describeEntry),
                ].join("\n"),
        };
      }),
  );

  server.registerTool(
    "list_homework",
    {
      title: "Homework",
      description: "Homework from the timetable service (default: today to 14 days ahead).",
      inputSchema: { from: date.optional(), to: date.optional(), ...pageInput },
      outputSchema: pagedOutput,
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const { start, end } = range(ctx.clock.now(), args.from, args.to, 14);
        const items = (await tt.homework(start, end)).sort(byDate);
        return page(items, args.limit, args.cursor, "homework");
      }),
  );

  server.registerTool(
    "list_exams",
    {
      title: "Exams",
      description: "Exams from the timetable service (default: today to 28 days ahead).",
      inputSchema: { from: date.optional(), to: date.optional(), ...pageInput },
      outputSchema: pagedOutput,
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const { start, end } = range(ctx.clock.now(), args.from, args.to, 28);
        const items = (await tt.exams(start, end)).sort(byDate);
        return page(items, args.limit, args.cursor, "exams");
      }),
  );

  server.registerTool(
    "get_messages_of_day",
    {
      title: "Messages of the day",
      description: "The school's messages of the day from the timetable service.",
      inputSchema: { date: date.optional() },
      outputSchema: {
        date: z.string(),
        messages: z.array(z.object({ subject: z.string(), text: z.string() })),
      },
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const d = args.date ?? ymd(ctx.clock.now());
        const messages = (await tt.messagesOfDay(d)).map((m) => ({
          subject: m.subject,
          text: htmlToText(m.body),
        }));
        return {
          structured: { date: d, messages },
          text:
            messages.length === 0
              ? `No messages for ${d}.`
              : messages.map((m) => `## ${m.subject}\n${m.text}`).join("\n\n"),
        };
      }),
  );
}

/** Portal tasks, plus timetable homework and exams when the timetable is configured. */
export function registerDeadlinesTool(server: McpServer, ctx: ToolContext): void {
  const tt = ctx.timetable;
  server.registerTool(
    "upcoming_deadlines",
    {
      title: "Upcoming deadlines",
      description:
        "Open portal tasks, plus timetable homework and exams when configured, due in the next days, merged and sorted.",
      inputSchema: { days: z.number().int().min(1).max(62).default(14), ...pageInput },
      outputSchema: { ...pagedOutput, errors: z.array(z.string()) },
      annotations: READ_ONLY,
    },
    (args) =>
      run(ctx, async () => {
        const now = ctx.clock.now();
        const start = ymd(now);
        const end = ymd(now + args.days * DAY);
        const errors: string[] = [];
        const settle = async (label: string, p: Promise<DatedItem[]>) => {
          try {
            return await p;
          } catch (err) {
            errors.push(`${label}: ${err instanceof Error ? err.message : "failed"}`);
            return [];
          }
        };
        const tasks = settle(
          "Portal tasks",
          ctx.portal
            .getJson<{ data?: Record<string, unknown>[] }>("/api/v3/tasks", { skip: 0, limit: 100 })
            .then((r) =>
              (r?.data ?? [])
                .filter((t) => typeof t.dueDate === "string")
                .map((t) => ({
                  kind: "task" as const,
                  date: String(t.dueDate),
                  title: String(t.name ?? "Task"),
                  subject: typeof t.courseName === "string" ? t.courseName : null,
                  detail: null,
                })),
            ),
        );
        const lists = await Promise.all([
          tasks,
          tt ? settle("Homework", tt.homework(start, end)) : [],
          tt ? settle("Exams", tt.exams(start, end)) : [],
        ]);
        const items = lists
          .flat()
          .filter((i) => i.date.slice(0, 10) >= start && i.date.slice(0, 10) <= end)
          .sort(byDate);
        const out = page(items, args.limit, args.cursor, "deadlines");
        return {
          structured: { ...out.structured, errors },
          text: out.text + (errors.length ? `\nPartial result: ${errors.join("; ")}` : ""),
        };
      }),
  );
}
