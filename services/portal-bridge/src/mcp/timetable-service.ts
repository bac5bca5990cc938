import type { Clock } from "@app/kit/clock";
import type { TimetableClient } from "../upstream/timetable.js";
import { ToolInputError } from "./format.js";
import { type LocalStamp, untisDate, untisDateTime, untisTime, weekdayOf } from "./time.js";

/**
 * Timetable reads shaped for the tools. Who is read comes from getUserData2017: a student
 * account reads itself; a parent account (`userData.elemType` LEGAL_GUARDIAN) reads one of
 * `userData.children`, each as `type: "STUDENT"` with the child's id. Master data (names of
 * subjects, rooms, teachers, classes, the time grid) comes from the same call and from
 * getTimetable2017 answers, and is cached briefly.
 */
const USERDATA_TTL_MS = 60 * 60_000;

interface Named {
  id: number;
  name?: string;
  longName?: string;
  firstName?: string;
  lastName?: string;
}

interface TimeGridUnit {
  label?: string;
  startTime?: unknown;
  endTime?: unknown;
}

interface MasterData {
  subjects?: Named[];
  rooms?: Named[];
  teachers?: Named[];
  klassen?: Named[];
  timeGrid?: { days?: { day?: string; units?: TimeGridUnit[] }[] };
  holidays?: { name?: string; longName?: string; startDate?: unknown; endDate?: unknown }[];
}

export interface Holiday {
  name: string;
  first_day: string;
  last_day: string;
}

export interface GridDay {
  /** Monday … Sunday */
  weekday: string;
  periods: { lesson: number; start: string; end: string }[];
}

const GRID_DAYS: Record<string, string> = {
  MON: "Monday",
  TUE: "Tuesday",
  WED: "Wednesday",
  THU: "Thursday",
  FRI: "Friday",
  SAT: "Saturday",
  SUN: "Sunday",
};

export interface Child {
  id: number;
  first_name: string;
  last_name: string;
}

export interface UserData2017 {
  userData?: {
    elemType?: string;
    elemId?: number;
    displayName?: string;
    schoolName?: string;
    children?: { id?: number; firstName?: string; lastName?: string }[];
  };
  masterData?: MasterData;
}

interface PeriodElement {
  type?: string;
  id?: number;
  orgId?: number;
}

interface Period {
  id?: number;
  lessonId?: number;
  startDateTime?: string;
  endDateTime?: string;
  elements?: PeriodElement[];
  is?: string[];
  text?: { lesson?: string; substitution?: string; info?: string };
}

export interface ScheduleEntry {
  date: string;
  weekday: string;
  /** Lesson number of the school's time grid (1 = first lesson), null when unknown. */
  lesson: number | null;
  start: string;
  end: string;
  subject: string | null;
  subject_code: string | null;
  teachers: string[];
  rooms: string[];
  classes: string[];
  /** What the period had before a change (teachers/rooms replaced), empty when unchanged. */
  original_teachers: string[];
  original_rooms: string[];
  cancelled: boolean;
  substitution: boolean;
  room_change: boolean;
  lesson_text: string | null;
  info: string | null;
}

export interface DatedItem {
  kind: "task" | "homework" | "exam";
  /** Local YYYY-MM-DD the item is due / takes place. */
  date: string;
  weekday: string;
  /** Local HH:MM, null when only a date is known. */
  time: string | null;
  end_time: string | null;
  title: string;
  subject: string | null;
  detail: string | null;
  /** Homework and tasks: whether it is marked done; null when the source does not say. */
  completed: boolean | null;
  /** Parent accounts: the child's first name (null for portal tasks and student accounts). */
  student?: string | null;
}

/** The element a timetable call reads, with the child's name for parent accounts. */
export interface Target {
  id: number;
  type: string;
  /** The child's first name (parent accounts) or the account's display name. */
  name: string;
}

const str = (v: unknown): string => (typeof v === "string" ? v : "");

/** The timetable client, the clock its cache is dated by, and TIMETABLE_STUDENT (the child read when none is named). */
export interface TimetableServiceDeps {
  client: TimetableClient;
  clock: Clock;
  presetStudent?: string | undefined;
}

export type TimetableService = ReturnType<typeof createTimetableService>;

export function createTimetableService(deps: TimetableServiceDeps) {
  const { client, clock, presetStudent } = deps;
  let cache: { at: number; value: UserData2017 } | null = null;

  async function userData(fresh = false): Promise<Record<string, unknown>> {
    const d = await loadUserData(fresh);
    return { ...(d.userData ?? {}) };
  }

  async function loadUserData(fresh = false): Promise<UserData2017> {
    const now = clock.now();
    if (!fresh && cache && now - cache.at < USERDATA_TTL_MS) return cache.value;
    const value = await client.call<UserData2017>("getUserData2017", {
      elementId: 0,
      deviceOs: "AND",
      deviceOsVersion: "",
    });
    cache = { at: now, value: value ?? {} };
    return cache.value;
  }

  /** Parent accounts: their children; student accounts: an empty list. */
  async function children(): Promise<Child[]> {
    const d = await loadUserData();
    return childrenOf(d);
  }

  async function isParent(): Promise<boolean> {
    const d = await loadUserData();
    return isParentAccount(d);
  }

  /**
   * Whose timetable a call reads. `student` is a first name, "first last" or an id; without
   * it a parent account reads TIMETABLE_STUDENT, else its only child, else it is an error
   * that lists the children.
   */
  async function target(student?: string): Promise<Target> {
    const d = await loadUserData();
    const u = d.userData ?? {};
    if (!isParentAccount(d)) {
      const own: Target = { id: u.elemId ?? 0, type: u.elemType ?? "STUDENT", name: u.displayName ?? "" };
      if (student !== undefined && student.trim() !== "" && !matches(student, own.id, own.name, ""))
        throw new ToolInputError(
          `This timetable account belongs to ${own.name || "one student"} and can read only that timetable; leave out student.`,
        );
      return own;
    }
    const kids = childrenOf(d);
    const list = kids.map((c) => `${c.first_name} ${c.last_name} (id ${c.id})`.trim()).join(", ");
    if (kids.length === 0)
      throw new ToolInputError("This parent account has no children linked in the timetable service.");
    const wanted = student?.trim() || presetStudent;
    if (wanted) {
      const hits = kids.filter((c) => matches(wanted, c.id, c.first_name, c.last_name));
      if (hits.length === 1 && hits[0]) return toTarget(hits[0]);
      throw new ToolInputError(
        `${hits.length === 0 ? "No child matches" : "Several children match"} "${wanted}". Children of this account: ${list}. Pass student with a first name or id.`,
      );
    }
    if (kids.length === 1 && kids[0]) return toTarget(kids[0]);
    throw new ToolInputError(
      `This parent account has several children: ${list}. Pass student with a first name or id (or set TIMETABLE_STUDENT).`,
    );
  }

  /**
   * Whose timetables a call reads: `student: "all"` means every child; with no student, a
   * parent account with several children and no TIMETABLE_STUDENT reads all of them; anything
   * else is one target as in target().
   */
  async function targets(student?: string): Promise<Target[]> {
    const d = await loadUserData();
    const wanted = student?.trim() ?? "";
    if (isParentAccount(d)) {
      const kids = childrenOf(d);
      const all = wanted.toLowerCase() === "all" || (wanted === "" && !presetStudent && kids.length > 1);
      if (all) return kids.map(toTarget);
    } else if (wanted.toLowerCase() === "all") return [await target()];
    return [await target(student)];
  }

  async function lookups(extra?: MasterData) {
    const d = await loadUserData();
    const md = d.masterData ?? {};
    const merge = (k: "subjects" | "rooms" | "teachers" | "klassen") => [
      ...(extra?.[k] ?? []),
      ...(md[k] ?? []),
    ];
    const lists: Record<string, Named[]> = {
      SUBJECT: merge("subjects"),
      ROOM: merge("rooms"),
      TEACHER: merge("teachers"),
      CLASS: merge("klassen"),
    };
    const find = (type: string, id: number) => lists[type]?.find((x) => x.id === id);
    /** Long names over codes: "Mathematics", a teacher's surname, a room's long name. */
    const long = (type: string, id: number): string | null => {
      const hit = find(type, id);
      if (!hit) return null;
      if (type === "TEACHER" && hit.lastName)
        return `${hit.firstName ? `${hit.firstName} ` : ""}${hit.lastName}`;
      return hit.longName || hit.name || String(id);
    };
    const short = (type: string, id: number): string | null => find(type, id)?.name ?? null;
    const grid = extra?.timeGrid?.days?.length ? extra.timeGrid : md.timeGrid;
    const units = (grid?.days?.[0]?.units ?? [])
      .map((u, i) => ({ n: Number.parseInt(str(u.label), 10) || i + 1, start: untisTime(u.startTime) }))
      .filter((u) => u.start !== null);
    return { long, short, units };
  }

  async function schedule(target: Target, startDate: string, endDate: string): Promise<ScheduleEntry[]> {
    const r = await client.call<{ timetable?: { periods?: Period[] }; masterData?: MasterData }>(
      "getTimetable2017",
      {
        id: target.id,
        type: target.type,
        startDate,
        endDate,
        masterDataTimestamp: 0,
        timetableTimestamp: 0,
        timetableTimestamps: [],
      },
    );
    const { long, short, units } = await lookups(r?.masterData);
    const entries = (r?.timetable?.periods ?? []).map((p) => {
      const els = p.elements ?? [];
      const names = (type: string, pick: (e: PeriodElement) => number | undefined) =>
        els
          .filter((e) => e.type === type)
          .map(pick)
          .filter((id): id is number => typeof id === "number" && id !== 0)
          .map((id) => long(type, id) ?? String(id));
      const current = (type: string) => names(type, (e) => e.id);
      // orgId is the original element when a period was changed (public clients agree).
      const original = (type: string) =>
        names(type, (e) =>
          e.orgId !== undefined && e.orgId !== 0 && e.orgId !== e.id ? e.orgId : undefined,
        );
      const is = p.is ?? [];
      const start = untisDateTime(p.startDateTime);
      const end = untisDateTime(p.endDateTime);
      const subjectEl = els.find((e) => e.type === "SUBJECT");
      const origTeachers = original("TEACHER");
      const origRooms = original("ROOM");
      const text = (v: unknown) => (str(v).trim() === "" ? null : str(v).trim());
      return {
        date: start?.date ?? "",
        weekday: start?.weekday ?? "",
        lesson: null as number | null,
        start: start?.time ?? "",
        end: end?.time ?? "",
        subject: subjectEl?.id ? (long("SUBJECT", subjectEl.id) ?? String(subjectEl.id)) : null,
        subject_code: subjectEl?.id ? short("SUBJECT", subjectEl.id) : null,
        teachers: current("TEACHER"),
        rooms: current("ROOM"),
        classes: current("CLASS"),
        original_teachers: origTeachers,
        original_rooms: origRooms,
        cancelled: is.includes("CANCELLED"),
        substitution: is.includes("SUBSTITUTION") || is.includes("IRREGULAR") || origTeachers.length > 0,
        room_change: is.includes("ROOMSUBSTITUTION") || origRooms.length > 0,
        lesson_text: text(p.text?.lesson),
        info: [text(p.text?.substitution), text(p.text?.info)].filter(Boolean).join(" – ") || null,
      } satisfies ScheduleEntry;
    });
    entries.sort((a, b) => (a.date + a.start).localeCompare(b.date + b.start));
    // Lesson numbers: the time grid's unit that starts then; without a grid, the order of the
    // day's distinct start times.
    const starts = new Map<string, string[]>();
    for (const e of entries) {
      const list = starts.get(e.date) ?? [];
      if (!list.includes(e.start)) list.push(e.start);
      starts.set(e.date, list);
    }
    for (const e of entries) {
      const unit = units.find((u) => u.start === e.start);
      const idx = starts.get(e.date)?.indexOf(e.start) ?? -1;
      e.lesson = unit ? unit.n : units.length === 0 && idx >= 0 ? idx + 1 : null;
    }
    return entries;
  }

  async function homework(target: Target, startDate: string, endDate: string): Promise<DatedItem[]> {
    const r = await client.call<{
      homeWorks?: {
        id?: number;
        lessonId?: number;
        startDate?: unknown;
        endDate?: unknown;
        text?: string;
        remark?: unknown;
        completed?: boolean;
      }[];
      lessonsById?: Record<
        string,
        { id?: number; subjectId?: number; subject?: string; lessonType?: string }
      >;
    }>("getHomeWork2017", { id: target.id, type: target.type, startDate, endDate });
    const { long } = await lookups();
    const lessons = r?.lessonsById ?? {};
    return (r?.homeWorks ?? []).map((h) => {
      const lesson = lessons[String(h.lessonId)];
      const subject =
        (lesson?.subjectId ? long("SUBJECT", lesson.subjectId) : null) ?? (lesson?.subject || null);
      const due = untisDate(h.endDate) ?? "";
      const assigned = untisDate(h.startDate);
      const remark = typeof h.remark === "string" && h.remark.trim() ? h.remark.trim() : null;
      return {
        kind: "homework" as const,
        date: due,
        weekday: due ? weekdayOf(due) : "",
        time: null,
        end_time: null,
        title: (h.text ?? "").trim() || "Homework",
        subject,
        detail: [assigned ? `given ${assigned}` : null, remark].filter(Boolean).join("; ") || null,
        completed: typeof h.completed === "boolean" ? h.completed : null,
      };
    });
  }

  async function exams(target: Target, startDate: string, endDate: string): Promise<DatedItem[]> {
    const r = await client.call<{
      exams?: {
        startDateTime?: string;
        endDateTime?: string;
        name?: string;
        examType?: string;
        subjectId?: number;
        roomIds?: number[];
        text?: string;
      }[];
    }>("getExams2017", { id: target.id, type: target.type, startDate, endDate });
    const { long } = await lookups();
    return (r?.exams ?? []).map((x) => {
      const start: LocalStamp | null = untisDateTime(x.startDateTime);
      const end = untisDateTime(x.endDateTime);
      const rooms = (x.roomIds ?? []).map((id) => long("ROOM", id) ?? String(id));
      const topic = (x.text ?? "").trim();
      return {
        kind: "exam" as const,
        date: start?.date ?? "",
        weekday: start?.weekday ?? "",
        time: start?.time ?? null,
        end_time: end?.time ?? null,
        title: [x.examType, x.name].filter((s) => s?.trim()).join(": ") || "Exam",
        subject: x.subjectId !== undefined ? long("SUBJECT", x.subjectId) : null,
        detail:
          [topic ? `topic: ${topic}` : null, rooms.length ? `room ${rooms.join("/")}` : null]
            .filter(Boolean)
            .join("; ") || null,
        completed: null,
      };
    });
  }

  /**
   * The school calendar from the master data getUserData2017 already returns: every holiday
   * (long name, first and last day) and the time grid per weekday.
   */
  async function calendar(): Promise<{ holidays: Holiday[]; grid: GridDay[] }> {
    const md = (await loadUserData()).masterData ?? {};
    const holidays = (md.holidays ?? [])
      .map((h) => ({
        name: str(h.longName) || str(h.name) || "Holiday",
        first_day: untisDate(h.startDate) ?? "",
        last_day: untisDate(h.endDate) ?? untisDate(h.startDate) ?? "",
      }))
      .filter((h) => h.first_day !== "" && h.last_day >= h.first_day)
      .sort((a, b) => a.first_day.localeCompare(b.first_day));
    const grid = (md.timeGrid?.days ?? []).flatMap((d) => {
      const weekday = GRID_DAYS[str(d.day).toUpperCase()];
      if (!weekday) return [];
      const periods = (d.units ?? []).flatMap((u, i) => {
        const start = untisTime(u.startTime);
        const end = untisTime(u.endTime);
        return start && end ? [{ lesson: Number.parseInt(str(u.label), 10) || i + 1, start, end }] : [];
      });
      return [{ weekday, periods }];
    });
    return { holidays, grid };
  }

  /** getMessagesOfDay2017 answers `{messages: [{id, subject, body, attachments}]}`. */
  async function messagesOfDay(
    date: string,
  ): Promise<{ subject: string; body: string; attachments: string[] }[]> {
    const r = await client.call<{
      messages?: { subject?: string; body?: string; attachments?: unknown[] }[];
    }>("getMessagesOfDay2017", { date });
    return (r?.messages ?? []).map((m) => ({
      subject: m.subject ?? "",
      body: m.body ?? "",
      attachments: (m.attachments ?? [])
        .map((a) =>
          typeof a === "string"
            ? a
            : str((a as { name?: unknown })?.name) || str((a as { url?: unknown })?.url),
        )
        .filter((a) => a !== ""),
    }));
  }

  return {
    userData,
    children,
    isParent,
    target,
    targets,
    schedule,
    homework,
    exams,
    calendar,
    messagesOfDay,
  };
}

function isParentAccount(d: UserData2017): boolean {
  return d.userData?.elemType === "LEGAL_GUARDIAN" || (d.userData?.children?.length ?? 0) > 0;
}

function childrenOf(d: UserData2017): Child[] {
  return (d.userData?.children ?? [])
    .filter((c) => typeof c.id === "number")
    .map((c) => ({ id: c.id as number, first_name: c.firstName ?? "", last_name: c.lastName ?? "" }));
}

const toTarget = (c: Child): Target => ({ id: c.id, type: "STUDENT", name: c.first_name || String(c.id) });

function matches(wanted: string, id: number, first: string, last: string): boolean {
  const w = wanted.trim().toLowerCase();
  if (w === String(id)) return true;
  const f = first.trim().toLowerCase();
  const full = `${f} ${last.trim().toLowerCase()}`.trim();
  return w === f || w === full || (f !== "" && full.startsWith(`${w} `)) || w === full.split(" ")[0];
}
