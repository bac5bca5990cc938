import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock } from "@app/kit/clock";
import { base32Decode, totp } from "../../src/upstream/totp.js";

/**
 * A fake of the WebUntis mobile JSON-RPC endpoint: `POST /WebUntis/jsonrpc_intern.do` with `m`,
 * `school` and `v` query parameters, per-request TOTP checked against the server's own clock,
 * -8524 (with data.serverTime) for a client time that drifts, and the five read methods.
 *
 * The answer shapes follow public clients' parsing code, not ours: SapuSeven/BetterUntis
 * (models UserData, UntisExam, UntisHomework, HomeworkResult with `lessonsById`, MessageResult
 * with `messages`, UntisDateTime read as a local wall-clock time), toughIQ/webuntis-mcp
 * (parent accounts: `userData.children` with id/firstName/lastName, each child read as
 * `type: "STUDENT"`; `result.messages`; `orgId` as the original element of a changed period).
 * Two accounts: a student, and a parent (LEGAL_GUARDIAN) with two children who may read only
 * those children (-8509 otherwise). Records every call.
 */
export const TT_SECRET = "JBSWY3DPEHPK3PXP"; // a 10-byte key, like the ones the service issues
export const TT_SCHOOL = "demo-school";
export const TT_USER = "ada.lovelace";
const MAX_SKEW_MS = 60_000;

/** The bridge's TIMETABLE_* variables for a fake listening at `url`. */
export const timetableEnv = (url: string) => ({
  TIMETABLE_SERVER: url,
  TIMETABLE_SCHOOL: TT_SCHOOL,
  TIMETABLE_USER: TT_USER,
  TIMETABLE_SECRET: TT_SECRET,
});

export interface SeenCall {
  method: string;
  query: Record<string, string>;
  params: Record<string, unknown>;
}

export class FakeTimetable {
  private server: Server | null = null;
  readonly calls: SeenCall[] = [];
  /** Server time = clock + serverOffsetMs (models a host clock that drifts). */
  serverOffsetMs = 0;
  /** Answer the next call with this JSON-RPC error code. */
  nextError: number | null = null;
  /** Which account the key belongs to. */
  account: "student" | "parent" = "student";
  /** Methods that answer -42003 (maintenance) until removed. */
  readonly failMethods = new Set<string>();
  /** Children whose reads answer -8509 (no right), e.g. a child who left the school. */
  readonly deniedChildren = new Set<number>();
  /** Pads each timetable answer with this many bytes (an oversized answer). */
  timetablePadBytes = 0;
  url = "";

  constructor(private readonly clock: Clock) {}

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((r) => this.server?.listen(0, "127.0.0.1", r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
    return this.url;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url ?? "/", "http://fake");
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method !== "POST" || url.pathname !== "/WebUntis/jsonrpc_intern.do") return send(404, {});
    let body: { id?: string; method?: string; params?: Record<string, unknown>[] };
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      return send(400, {});
    }
    const id = body.id ?? null;
    const params = body.params?.[0] ?? {};
    this.calls.push({ method: String(body.method), query: Object.fromEntries(url.searchParams), params });
    const error = (code: number, message: string, data?: unknown) =>
      send(200, { id, jsonrpc: "2.0", error: { code, message, ...(data ? { data } : {}) } });
    if (!url.searchParams.get("v")) return error(-8998, "missing version");
    if (url.searchParams.get("school") !== TT_SCHOOL) return error(-8500, "invalid schoolname");
    if (url.searchParams.get("m") !== body.method) return error(-32600, "method mismatch");
    const serverTime = this.clock.now() + this.serverOffsetMs;
    const auth = (params.auth ?? {}) as { user?: string; otp?: string; clientTime?: number };
    if (!auth.otp || !auth.user) return error(-8520, "authentication required");
    if (typeof auth.clientTime !== "number" || Math.abs(auth.clientTime - serverTime) > MAX_SKEW_MS)
      return error(-8524, "invalid client time", { serverTime });
    const key = base32Decode(TT_SECRET);
    const valid = [-30_000, 0, 30_000].map((d) => totp(key, serverTime + d));
    if (auth.user !== TT_USER || !valid.includes(auth.otp)) return error(-8521, "authentication error");
    if (this.nextError !== null) {
      const code = this.nextError;
      this.nextError = null;
      return error(code, "error");
    }
    const result = this.result(String(body.method), params);
    if (result === undefined) return error(-32601, "Method not found");
    const code = (result as { __error?: number }).__error;
    if (code !== undefined) return error(code, code === -8509 ? "no right" : "error");
    send(200, { id, jsonrpc: "2.0", result });
  }

  private result(method: string, params: Record<string, unknown>): unknown {
    if (this.failMethods.has(method)) return { __error: -42003 };
    switch (method) {
      case "getUserData2017":
        return {
          masterData: MASTER_DATA,
          userData:
            this.account === "parent"
              ? {
                  elemType: "LEGAL_GUARDIAN",
                  elemId: 900,
                  displayName: "Grace Hopper",
                  schoolName: "Demo School",
                  departmentId: 0,
                  children: PARENT_CHILDREN,
                  klassenIds: [],
                  rights: [],
                }
              : {
                  elemType: "STUDENT",
                  elemId: STUDENT_ID,
                  displayName: "Ada Lovelace",
                  schoolName: "Demo School",
                  departmentId: 0,
                  children: [],
                  klassenIds: [30],
                  rights: [],
                },
          settings: {},
        };
      case "getTimetable2017": {
        const who = this.reader(params);
        if (who === null) return { __error: -8509 };
        const periods: unknown[] = [];
        for (const d of daysOf(String(params.startDate), String(params.endDate))) {
          if (weekend(d)) continue;
          periods.push(...periodsOf(who, d));
        }
        if (this.timetablePadBytes > 0)
          periods.push({ id: 0, text: { info: "x".repeat(this.timetablePadBytes) } });
        return {
          masterData: MASTER_DATA,
          timetable: { displayableStartDate: params.startDate, displayableEndDate: params.endDate, periods },
        };
      }
      case "getHomeWork2017": {
        const who = this.reader(params);
        if (who === null) return { __error: -8509 };
        const from = String(params.startDate);
        const to = String(params.endDate);
        return {
          homeWorks: HOMEWORK.filter((h) => h.who === who && h.endDate >= from && h.startDate <= to).map(
            ({ who: _w, ...h }) => h,
          ),
          lessonsById: LESSONS_BY_ID,
        };
      }
      case "getExams2017": {
        const who = this.reader(params);
        if (who === null) return { __error: -8509 };
        const from = String(params.startDate);
        const to = String(params.endDate);
        return {
          exams: EXAMS.filter(
            (x) =>
              x.who === who && x.startDateTime.slice(0, 10) >= from && x.startDateTime.slice(0, 10) <= to,
          ).map(({ who: _w, ...x }) => x),
        };
      }
      case "getMessagesOfDay2017":
        return {
          messages: [
            {
              id: 1,
              subject: "Snow",
              body: "<p>School opens at <b>10</b> on " + String(params.date) + ".</p>",
              attachments: [{ id: 3, name: "snow-plan.pdf", url: "https://example.invalid/x" }],
            },
          ],
        };
      default:
        return undefined;
    }
  }

  /** Whose data a call may read: the student herself, or a parent's child as STUDENT. */
  private reader(params: Record<string, unknown>): number | null {
    if (params.type !== "STUDENT") return null;
    const id = Number(params.id);
    if (this.account === "parent")
      return PARENT_CHILDREN.some((c) => c.id === id) && !this.deniedChildren.has(id) ? id : null;
    return id === STUDENT_ID ? id : null;
  }
}

export const STUDENT_ID = 4711;
export const PARENT_CHILDREN = [
  { id: 101, firstName: "Anna", lastName: "Hopper" },
  { id: 102, firstName: "Ben", lastName: "Hopper" },
];

/** Master data as getUserData2017 / getTimetable2017 send it (public clients' models). */
const MASTER_DATA = {
  timeStamp: 1_763_000_000_000,
  subjects: [
    {
      id: 1,
      name: "Ma",
      longName: "Mathematics",
      departmentIds: [],
      foreColor: "#000000",
      backColor: "#ffffff",
      active: true,
      displayAllowed: true,
    },
    {
      id: 2,
      name: "Bi",
      longName: "Biology",
      departmentIds: [],
      foreColor: "#000000",
      backColor: "#ffffff",
      active: true,
      displayAllowed: true,
    },
    {
      id: 3,
      name: "En",
      longName: "English",
      departmentIds: [],
      foreColor: "#000000",
      backColor: "#ffffff",
      active: true,
      displayAllowed: true,
    },
  ],
  rooms: [
    { id: 10, name: "R101", longName: "Room 101", departmentId: 0, active: true, displayAllowed: true },
    { id: 11, name: "R202", longName: "Lab 202", departmentId: 0, active: true, displayAllowed: true },
  ],
  teachers: [
    {
      id: 20,
      name: "SMI",
      firstName: "Sam",
      lastName: "Smith",
      departmentIds: [],
      active: true,
      displayAllowed: true,
    },
    {
      id: 21,
      name: "JON",
      firstName: "Jo",
      lastName: "Jones",
      departmentIds: [],
      active: true,
      displayAllowed: true,
    },
  ],
  klassen: [{ id: 30, name: "9b", longName: "Class 9b", departmentId: 0, active: true, displayable: true }],
  // Holidays and school years as public clients read them (toughIQ/webuntis-mcp parse_holiday:
  // name, longName, startDate, endDate as ISO dates or yyyymmdd integers).
  holidays: [
    { id: 1, name: "Herbst", longName: "Herbstferien", startDate: "2026-10-19", endDate: "2026-10-30" },
    { id: 2, name: "Weihn", longName: "Weihnachtsferien", startDate: "2026-12-21", endDate: "2027-01-01" },
    { id: 3, name: "BFT", longName: "Beweglicher Ferientag", startDate: 20261207, endDate: 20261207 },
    { id: 4, name: "Winter", longName: "Winterferien", startDate: "2027-02-01", endDate: "2027-02-06" },
  ],
  schoolyears: [{ id: 7, name: "2026/2027", startDate: "2026-08-10", endDate: "2027-07-16" }],
  // Mon-Thu six lessons, Friday five (the grid can differ per weekday).
  timeGrid: {
    days: ["MON", "TUE", "WED", "THU", "FRI"].map((day) => ({
      day,
      units: [
        { label: "1", startTime: "T08:00", endTime: "T08:45" },
        { label: "2", startTime: "T08:50", endTime: "T09:35" },
        { label: "3", startTime: "T09:50", endTime: "T10:35" },
        { label: "4", startTime: "T10:40", endTime: "T11:25" },
        { label: "5", startTime: "T11:40", endTime: "T12:25" },
        ...(day === "FRI" ? [] : [{ label: "6", startTime: "T12:30", endTime: "T13:15" }]),
      ],
    })),
  },
};

/** WebUntis 2017 periods: wall-clock times with a literal Z, elements with orgId for changes. */
function periodsOf(who: number, d: string): unknown[] {
  const p = (id: number, start: string, end: string, elements: unknown[], is: string[], text = {}) => ({
    id: id * 100 + who,
    lessonId: 5,
    startDateTime: `${d}T${start}Z`,
    endDateTime: `${d}T${end}Z`,
    foreColor: "#000000",
    backColor: "#ffffff",
    innerForeColor: "#000000",
    innerBackColor: "#ffffff",
    text: { lesson: "", substitution: "", info: "", ...text },
    elements,
    can: [],
    is,
    homeWorks: [],
    exam: null,
  });
  const klass = { type: "CLASS", id: 30, orgId: 0, missing: false, state: "REGULAR" };
  const el = (type: string, id: number, orgId = 0) => ({ type, id, orgId, missing: false, state: "REGULAR" });
  if (who === 102)
    return [
      p(1, "08:00", "08:45", [klass, el("TEACHER", 20), el("SUBJECT", 3), el("ROOM", 10)], ["STANDARD"]),
      p(3, "09:50", "10:35", [klass, el("TEACHER", 21), el("SUBJECT", 2), el("ROOM", 11)], ["STANDARD"]),
    ];
  return [
    // Sorted out of order on purpose: the bridge sorts.
    p(
      2,
      "08:50",
      "09:35",
      [klass, el("TEACHER", 20), el("SUBJECT", 2), el("ROOM", 11, 10)],
      ["ROOMSUBSTITUTION"],
    ),
    p(
      1,
      "08:00",
      "08:45",
      [klass, el("TEACHER", 21, 20), el("SUBJECT", 1), el("ROOM", 10)],
      ["SUBSTITUTION"],
      {
        substitution: "Vertretung",
      },
    ),
    p(3, "09:50", "10:35", [klass, el("TEACHER", 20), el("SUBJECT", 3), el("ROOM", 10)], ["CANCELLED"], {
      info: "Teacher ill",
    }),
    p(4, "10:40", "11:25", [klass, el("TEACHER", 20), el("SUBJECT", 1), el("ROOM", 10)], ["STANDARD"], {
      lesson: "Fractions",
    }),
  ];
}

const HOMEWORK = [
  {
    who: 101,
    id: 1,
    lessonId: 5,
    startDate: "2026-11-20",
    endDate: "2026-11-24",
    text: "Exercise 4 on page 37",
    remark: "",
    completed: false,
    attachments: [],
  },
  {
    who: 101,
    id: 2,
    lessonId: 6,
    startDate: "2026-11-23",
    endDate: "2026-11-26",
    text: "Draw a plant cell",
    remark: "",
    completed: true,
    attachments: [],
  },
  {
    who: 102,
    id: 3,
    lessonId: 7,
    startDate: "2026-11-21",
    endDate: "2026-11-24",
    text: "Read chapter 2",
    remark: "",
    completed: false,
    attachments: [],
  },
  {
    who: STUDENT_ID,
    id: 4,
    lessonId: 5,
    startDate: "2026-11-20",
    endDate: "2026-11-25",
    text: "Exercise 4",
    remark: "",
    completed: false,
    attachments: [],
  },
];

const LESSONS_BY_ID = {
  "5": { id: 5, subjectId: 1, teacherIds: [21], klasseIds: [30] },
  "6": { id: 6, subjectId: 2, teacherIds: [20], klasseIds: [30] },
  "7": { id: 7, subjectId: 3, teacherIds: [20], klasseIds: [30] },
};

const exam = (who: number, id: number, day: string, subjectId: number, name: string, text: string) => ({
  who,
  id,
  examType: "Klassenarbeit",
  startDateTime: `${day}T08:00Z`,
  endDateTime: `${day}T09:30Z`,
  departmentId: 0,
  subjectId,
  klasseIds: [30],
  roomIds: [10],
  teacherIds: [20],
  invigilators: [],
  name,
  text,
});
const EXAMS = [
  exam(101, 9, "2026-11-25", 2, "Cells test", "Chapter 3: cells and tissues"),
  exam(102, 10, "2026-11-27", 3, "Vocabulary", "Unit 4"),
  exam(STUDENT_ID, 11, "2026-11-24", 2, "Cells test", ""),
];

function daysOf(from: string, to: string): string[] {
  const out: string[] = [];
  for (
    let t = Date.parse(`${from}T00:00:00Z`);
    t <= Date.parse(`${to}T00:00:00Z`) && out.length < 100;
    t += 86_400_000
  )
    out.push(new Date(t).toISOString().slice(0, 10));
  return out;
}

const weekend = (d: string) => [0, 6].includes(new Date(`${d}T00:00:00Z`).getUTCDay());
