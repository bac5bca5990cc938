import type { Clock } from "@app/kit/clock";
import type { TimetableClient } from "../upstream/timetable.js";

/**
 * Timetable reads shaped for the tools: the user's element (who "me" is) and master data (names
 * of subjects, rooms, teachers, classes) come from getUserData2017 and are cached briefly.
 */
const USERDATA_TTL_MS = 60 * 60_000;

interface Named {
  id: number;
  name?: string;
  longName?: string;
}

export interface UserData2017 {
  userData?: { elemType?: string; elemId?: number; displayName?: string; schoolName?: string };
  masterData?: { subjects?: Named[]; rooms?: Named[]; teachers?: Named[]; klassen?: Named[] };
}

interface PeriodElement {
  type?: string;
  id?: number;
  orgId?: number;
}

interface Period {
  id?: number;
  startDateTime?: string;
  endDateTime?: string;
  elements?: PeriodElement[];
  is?: string[];
  text?: { lesson?: string; substitution?: string; info?: string };
}

export interface ScheduleEntry {
  start: string;
  end: string;
  subject: string | null;
  teachers: string[];
  rooms: string[];
  classes: string[];
  cancelled: boolean;
  substitution: boolean;
  room_change: boolean;
  info: string | null;
}

export interface DatedItem {
  kind: "task" | "homework" | "exam";
  date: string;
  title: string;
  subject: string | null;
  detail: string | null;
}

/** YYYY-MM-DD of epoch ms (UTC). */
export const ymd = (ms: number): string => new Date(ms).toISOString().slice(0, 10);

export class TimetableService {
  private cache: { at: number; value: UserData2017 } | null = null;

  constructor(
    private readonly client: TimetableClient,
    private readonly clock: Clock,
  ) {}

  async userData(fresh = false): Promise<Record<string, unknown>> {
    const d = await this.loadUserData(fresh);
    return { ...(d.userData ?? {}) };
  }

  private async loadUserData(fresh = false): Promise<UserData2017> {
    const now = this.clock.now();
    if (!fresh && this.cache && now - this.cache.at < USERDATA_TTL_MS) return this.cache.value;
    const value = await this.client.call<UserData2017>("getUserData2017", {
      elementId: 0,
      deviceOs: "AND",
      deviceOsVersion: "",
    });
    this.cache = { at: now, value: value ?? {} };
    return this.cache.value;
  }

  private async element(): Promise<{
    id: number;
    type: string;
    names: (type: string, id: number) => string | null;
  }> {
    const d = await this.loadUserData();
    const lists: Record<string, Named[]> = {
      SUBJECT: d.masterData?.subjects ?? [],
      ROOM: d.masterData?.rooms ?? [],
      TEACHER: d.masterData?.teachers ?? [],
      CLASS: d.masterData?.klassen ?? [],
    };
    const names = (type: string, id: number) => {
      const hit = lists[type]?.find((x) => x.id === id);
      return hit ? (hit.name ?? hit.longName ?? String(id)) : null;
    };
    return { id: d.userData?.elemId ?? 0, type: d.userData?.elemType ?? "STUDENT", names };
  }

  async schedule(startDate: string, endDate: string): Promise<ScheduleEntry[]> {
    const el = await this.element();
    const r = await this.client.call<{ timetable?: { periods?: Period[] } }>("getTimetable2017", {
      id: el.id,
      type: el.type,
      startDate,
      endDate,
      masterDataTimestamp: 0,
      timetableTimestamp: 0,
      timetableTimestamps: [],
    });
    const periods = r?.timetable?.periods ?? [];
    return periods
      .map((p) => {
        const els = p.elements ?? [];
        const of = (type: string) =>
          els.filter((e) => e.type === type).map((e) => el.names(type, e.id ?? 0) ?? String(e.id ?? ""));
        const changed = (type: string) =>
          els.some((e) => e.type === type && e.orgId !== undefined && e.orgId !== 0 && e.orgId !== e.id);
        const is = p.is ?? [];
        const subject = of("SUBJECT")[0] ?? null;
        const info = [p.text?.substitution, p.text?.info].filter(Boolean).join(" ").trim();
        return {
          start: p.startDateTime ?? "",
          end: p.endDateTime ?? "",
          subject,
          teachers: of("TEACHER"),
          rooms: of("ROOM"),
          classes: of("CLASS"),
          cancelled: is.includes("CANCELLED"),
          substitution: is.includes("SUBSTITUTION") || is.includes("IRREGULAR") || changed("TEACHER"),
          room_change: is.includes("ROOMSUBSTITUTION") || changed("ROOM"),
          info: info === "" ? null : info,
        };
      })
      .sort((a, b) => a.start.localeCompare(b.start));
  }

  async homework(startDate: string, endDate: string): Promise<DatedItem[]> {
    const el = await this.element();
    const r = await this.client.call<{
      homeWorks?: { id?: number; lessonId?: number; endDate?: string; text?: string; completed?: boolean }[];
      lessons?: { id?: number; subject?: string }[];
    }>("getHomeWork2017", { id: el.id, type: el.type, startDate, endDate });
    const lessons = new Map((r?.lessons ?? []).map((l) => [l.id, l.subject ?? null]));
    return (r?.homeWorks ?? []).map((h) => ({
      kind: "homework" as const,
      date: h.endDate ?? "",
      title: (h.text ?? "").trim() || "Homework",
      subject: lessons.get(h.lessonId) ?? null,
      detail: h.completed ? "completed" : null,
    }));
  }

  async exams(startDate: string, endDate: string): Promise<DatedItem[]> {
    const el = await this.element();
    const r = await this.client.call<{
      exams?: {
        startDateTime?: string;
        name?: string;
        examType?: string;
        subjectId?: number;
        text?: string;
      }[];
    }>("getExams2017", { id: el.id, type: el.type, startDate, endDate });
    return (r?.exams ?? []).map((x) => ({
      kind: "exam" as const,
      date: x.startDateTime ?? "",
      title: x.name || x.examType || "Exam",
      subject: x.subjectId !== undefined ? el.names("SUBJECT", x.subjectId) : null,
      detail: x.text || null,
    }));
  }

  async messagesOfDay(date: string): Promise<{ subject: string; body: string }[]> {
    const r = await this.client.call<{
      messageOfDayCollection?: { messages?: { subject?: string; body?: string }[] };
    }>("getMessagesOfDay2017", { date });
    return (r?.messageOfDayCollection?.messages ?? []).map((m) => ({
      subject: m.subject ?? "",
      body: m.body ?? "",
    }));
  }
}
