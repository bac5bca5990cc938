import type { Clock, TimerHandle } from "@app/kit/clock";
import type { Logger } from "@app/kit/logger";
import type { AlertPriority } from "../alerts/format.js";
import { richText, ToolInputError } from "../mcp/format.js";
import { addDays, dayLabel, nextSchoolDay, stampLabel } from "../mcp/time.js";
import type { Target } from "../mcp/timetable-service.js";
import { changeText, perChild, schoolDayFrom } from "../mcp/timetable-tools.js";
import type { ToolContext } from "../mcp/tools.js";
import { PortalError } from "../upstream/portal.js";
import { TimetableError } from "../upstream/timetable.js";
import { type DigestTime, nextDigestAt } from "./schedule.js";
import { type SeenStore, seenKey } from "./seen.js";

/**
 * What changed since the last digest and what matters next, for every child: cancellations,
 * substitutions and room changes today and on the next school day, homework and portal tasks
 * due by the next school day, new messages of the day, new exams, new portal news. Every read
 * goes through the same clients as the tools (the five allowlisted timetable methods, portal
 * GETs with the keep-alive's token). "New" means first seen by the bridge after `since`
 * (seen.ts keeps the record across restarts). A source that fails is named, and its items come
 * up once it answers again.
 */
export type Section = "changes" | "due" | "messages" | "exams" | "news";

export interface DigestItem {
  section: Section;
  student: string | null;
  text: string;
}

interface Collected extends DigestItem {
  key: string;
  /** An upstream date the item carries (news): older than `since` is not new. */
  stamp?: number;
}

export interface WhatsNew {
  since: string;
  until: string;
  next_school_day: string;
  items: DigestItem[];
  errors: string[];
  text: string;
}

const HEADINGS: Record<Section, (nextDay: string) => string> = {
  changes: () => "Timetable changes",
  due: (d) => `Due by ${dayLabel(d)}`,
  messages: () => "Messages of the day",
  exams: () => "New exams",
  news: () => "New portal news",
};
const ORDER: Section[] = ["changes", "due", "messages", "exams", "news"];
/** ntfy takes 4096 bytes; Slack and Gotify more. */
const MAX_TEXT = 3500;
const DEFAULT_SINCE_MS = 24 * 3600_000;
const EXAMS_AHEAD_DAYS = 28;

export interface DigestOptions {
  ctx: ToolContext;
  store: SeenStore;
  clock: Clock;
  logger: Logger;
  /** DIGEST_SCHEDULE parsed; empty: whats_new only. */
  times: DigestTime[];
  /** Delivery through the alert webhook (null without ALERT_WEBHOOK_URL). */
  send:
    | ((text: string, opts: { title: string; priority: AlertPriority }) => Promise<{ delivered: boolean }>)
    | null;
}

const errText = (err: unknown): string =>
  err instanceof PortalError || err instanceof TimetableError || err instanceof ToolInputError
    ? err.message
    : "failed";

export type Digest = ReturnType<typeof createDigest>;

export function createDigest(deps: DigestOptions) {
  let timer: TimerHandle | null = null;
  let chain: Promise<unknown> = Promise.resolve();

  /** Schedules the next digest (nothing without DIGEST_SCHEDULE or a webhook). */
  function start(): void {
    if (deps.times.length === 0 || !deps.send) return;
    const now = deps.clock.now();
    const at = nextDigestAt(deps.times, now, deps.ctx.time.zone);
    if (!Number.isFinite(at)) return;
    timer = deps.clock.setTimeout(() => {
      queue(() => run());
      start();
    }, at - now);
  }

  function stop(): void {
    timer?.cancel();
    timer = null;
  }

  /** Resolves when the digests and answers queued so far are done (tests await it). */
  function settled(): Promise<void> {
    return chain.then(
      () => undefined,
      () => undefined,
    );
  }

  /** One collection at a time, so the record is never written by two at once. */
  function queue<T>(fn: () => Promise<T>): Promise<T> {
    const next = chain.then(fn, fn);
    chain = next.catch(() => undefined);
    return next;
  }

  /** whats_new: what is new since `since` (default: the last digest, else 24 h back). */
  function whatsNew(since?: number): Promise<WhatsNew> {
    return queue(async () => {
      const r = await collectNew(since);
      await save(deps.clock.now());
      return r;
    });
  }

  /** A scheduled digest: posted when something is new or a source failed; nothing otherwise. */
  async function run(): Promise<void> {
    const send = deps.send;
    if (!send) return;
    const r = await collectNew();
    const now = deps.clock.now();
    if (r.items.length === 0 && r.errors.length === 0) {
      deps.logger.info("digest: nothing new; no message sent");
      deps.store.lastDigestAt = now;
    } else {
      const title = `School digest ${deps.ctx.time.label(now)}`;
      const { delivered } = await send(r.text, { title, priority: "default" });
      // Undelivered: the next digest covers the same span again.
      if (delivered) deps.store.lastDigestAt = now;
      deps.logger.info(
        { items: r.items.length, failed_sources: r.errors.length, delivered },
        delivered ? "digest sent" : "digest not delivered; the next one covers the same span",
      );
    }
    await save(now);
  }

  async function save(now: number): Promise<void> {
    try {
      await deps.store.save(now);
    } catch (err) {
      deps.logger.error(
        { cause: (err as NodeJS.ErrnoException)?.code ?? "error" },
        "the digest record (STATE_DIR/seen.json) could not be saved",
      );
    }
  }

  async function collectNew(sinceArg?: number): Promise<WhatsNew> {
    const { clock, store, ctx } = deps;
    const now = clock.now();
    const since = sinceArg ?? store.lastDigestAt ?? now - DEFAULT_SINCE_MS;
    const { items, errors, nextDay } = await collect(now);
    const fresh = items.filter(
      (i) => store.firstSeen(i.key, now) > since && (i.stamp === undefined || i.stamp > since),
    );
    const out = fresh.map(({ section, student, text }) => ({ section, student, text }));
    return {
      since: new Date(since).toISOString(),
      until: new Date(now).toISOString(),
      next_school_day: nextDay,
      items: out,
      errors,
      text: render(out, errors, nextDay, `${ctx.time.label(since)} (${ctx.time.zone})`),
    };
  }

  async function collect(now: number): Promise<{ items: Collected[]; errors: string[]; nextDay: string }> {
    const { ctx } = deps;
    const tt = ctx.timetable;
    const today = ctx.time.today(now);
    const items: Collected[] = [];
    const errors: string[] = [];
    const attempt = async (label: string, fn: () => Promise<void>) => {
      try {
        await fn();
      } catch (err) {
        errors.push(`${label}: ${errText(err)}`);
      }
    };
    let nextDay = nextSchoolDay(addDays(today, 1));
    if (tt)
      await attempt("Timetable calendar", async () => {
        nextDay = schoolDayFrom(addDays(today, 1), "00:00", await tt.calendar())?.date ?? nextDay;
      });
    const tasks: Promise<void>[] = [];
    if (tt) {
      tasks.push(
        attempt("Timetable", async () => {
          const r = await perChild(ctx, "all", (t) => childItems(t, today, nextDay, errors));
          for (const c of r.results) items.push(...c.value.map((i) => ({ ...i, student: c.who })));
          errors.push(...r.errors.map((e) => `Timetable (${e})`));
        }),
      );
      tasks.push(
        attempt("Messages of the day", async () => {
          for (const m of await tt.messagesOfDay(today)) {
            const text = richText(m.body, 400).replace(/\n+/g, " ");
            items.push({
              key: seenKey(["motd", m.subject, m.body]),
              section: "messages",
              student: null,
              text: `${m.subject || "(no subject)"}: ${text}`,
            });
          }
        }),
      );
    }
    if (ctx.portal.configured) {
      tasks.push(
        attempt("Portal tasks", async () => {
          const r = await ctx.portal.getJson<{ data?: Record<string, unknown>[] }>("/api/v3/tasks", {
            skip: 0,
            limit: 100,
          });
          for (const t of r?.data ?? []) {
            const due = ctx.time.portalTime(t.dueDate);
            if (!due || due.date > nextDay || Date.parse(String(t.dueDate)) < now) continue;
            const desc = richText(t.description, 160).replace(/\n+/g, " ");
            items.push({
              key: seenKey(["due-task", String(t.id ?? t.name), String(t.dueDate)]),
              section: "due",
              student: null,
              text: `task${typeof t.courseName === "string" ? ` ${t.courseName}` : ""}: ${String(t.name ?? "Task")}, due ${stampLabel(due)}${desc ? ` (${desc})` : ""}`,
            });
          }
        }),
      );
      tasks.push(
        attempt("Portal news", async () => {
          const r = await ctx.portal.getJson<{ data?: Record<string, unknown>[] }>("/api/v3/news", {
            skip: 0,
            limit: 20,
          });
          for (const n of r?.data ?? []) {
            const at = typeof n.displayAt === "string" ? Date.parse(n.displayAt) : Number.NaN;
            const body = richText(n.content, 200).replace(/\n+/g, " ");
            items.push({
              key: seenKey(["news", String(n.id ?? n.title)]),
              section: "news",
              student: null,
              text: `${String(n.title ?? "News")}${body ? `: ${body}` : ""}`,
              ...(Number.isNaN(at) ? {} : { stamp: at }),
            });
          }
        }),
      );
    }
    await Promise.all(tasks);
    return { items, errors, nextDay };
  }

  /** One child's changes (today and the next school day), homework due, and exams ahead. */
  async function childItems(
    t: Target,
    today: string,
    nextDay: string,
    errors: string[],
  ): Promise<Omit<Collected, "student">[]> {
    const tt = deps.ctx.timetable;
    if (!tt) return [];
    const out: Omit<Collected, "student">[] = [];
    const [sched, hw, ex] = await Promise.allSettled([
      tt.schedule(t, today, nextDay),
      tt.homework(t, today, nextDay),
      tt.exams(t, today, addDays(today, EXAMS_AHEAD_DAYS)),
    ]);
    const failed = (what: string, r: PromiseSettledResult<unknown>) => {
      if (r.status === "rejected") errors.push(`${what} (${t.name}): ${errText(r.reason)}`);
    };
    failed("Timetable", sched);
    failed("Homework", hw);
    failed("Exams", ex);
    if (sched.status === "fulfilled")
      for (const p of sched.value) {
        if (!(p.cancelled || p.substitution || p.room_change) || (p.date !== today && p.date !== nextDay))
          continue;
        const change = changeText(p);
        out.push({
          key: seenKey(["chg", t.id, p.date, p.start, p.subject, change]),
          section: "changes",
          text: `${dayLabel(p.date)} ${p.lesson !== null ? `lesson ${p.lesson} ` : ""}(${p.start}–${p.end}) ${p.subject ?? "(no subject)"}: ${change}`,
        });
      }
    if (hw.status === "fulfilled")
      for (const h of hw.value) {
        if (h.completed === true || h.date < today || h.date > nextDay) continue;
        out.push({
          key: seenKey(["due-hw", t.id, h.date, h.subject, h.title]),
          section: "due",
          text: `homework${h.subject ? ` ${h.subject}` : ""}: ${h.title} (due ${dayLabel(h.date)})`,
        });
      }
    if (ex.status === "fulfilled")
      for (const x of ex.value)
        out.push({
          key: seenKey(["exam", t.id, x.date, x.time, x.title]),
          section: "exams",
          text: `${dayLabel(x.date)}${x.time ? ` ${x.time}` : ""}${x.subject ? ` ${x.subject}` : ""}: ${x.title}${x.detail ? ` (${x.detail})` : ""}`,
        });
    return out;
  }

  return {
    start,
    stop,
    settled,
    whatsNew,
    run,
  };
}

function render(items: DigestItem[], errors: string[], nextDay: string, sinceLabel: string): string {
  const lines: string[] = [];
  if (items.length === 0) lines.push(`Nothing new since ${sinceLabel}.`);
  for (const section of ORDER) {
    const list = items.filter((i) => i.section === section);
    if (list.length === 0) continue;
    lines.push(`${HEADINGS[section](nextDay)}:`);
    for (const i of list) lines.push(`- ${i.student ? `${i.student}: ` : ""}${i.text}`);
  }
  if (errors.length) lines.push(`Could not check: ${errors.join("; ")}`);
  const text = lines.join("\n");
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT - 1)}…` : text;
}
