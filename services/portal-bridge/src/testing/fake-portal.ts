import { createHmac, randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock } from "@app/kit/clock";

/**
 * A faithful fake of the school portal's REST API (contract "Upstream facts"): JWTs signed by
 * the fake, a session store keyed `jwt:{accountId}:{jti}` with a sliding idle TTL on an injected
 * clock, the inactivity 401, refresh-session, logout, /me, paginated lists, config/public and a
 * file download. It records every request so tests can assert what the bridge sent.
 */
export const IDLE_TTL_S = 7200;
const SIGNING_KEY = randomBytes(32);

export interface Identity {
  userId: string;
  accountId: string;
  firstName?: string;
  lastName?: string;
}

export interface SeenRequest {
  method: string;
  path: string;
  authorization: string | undefined;
}

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");

export function signJwt(payload: Record<string, unknown>): string {
  const head = `${b64({ alg: "HS256", typ: "JWT" })}.${b64(payload)}`;
  return `${head}.${createHmac("sha256", SIGNING_KEY).update(head).digest("base64url")}`;
}

function verifyJwt(token: string): Record<string, unknown> | null {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  const sig = createHmac("sha256", SIGNING_KEY).update(`${parts[0]}.${parts[1]}`).digest("base64url");
  if (sig !== parts[2]) return null;
  try {
    return JSON.parse(Buffer.from(parts[1] as string, "base64url").toString("utf8"));
  } catch {
    return null;
  }
}

type Item = Record<string, unknown>;

export interface FakePortalData {
  tasks: Item[];
  finishedTasks: Item[];
  courses: Item[];
  rooms: Item[];
  news: Item[];
  submissions: Item[];
  files: Record<string, { name: string; type: string; body: Buffer }>;
}

/**
 * Portal shapes as the public server and its clients read them: a task's `description` is
 * rich text `{content, type: "richText"}` (CKEditor HTML; older tasks carry a plain string or
 * none), tasks carry `status` counters and `lessonName`; news `content` is an HTML string with
 * links; a submission's `comment` and `gradeComment` are HTML.
 */
export function defaultData(): FakePortalData {
  const tasks = Array.from({ length: 45 }, (_, i) => ({
    id: `task${String(i).padStart(3, "0")}`,
    name: `Task ${i}`,
    courseName: i % 2 ? "Maths" : "Biology",
    courseId: i % 2 ? "course1" : "course2",
    lessonName: i % 3 === 0 ? `Lesson ${i}` : undefined,
    dueDate: new Date(Date.parse("2026-11-22T08:00:00.000Z") + i * 86_400_000).toISOString(),
    availableDate: "2026-11-01T08:00:00.000Z",
    createdAt: "2026-11-01T08:00:00.000Z",
    updatedAt: "2026-11-01T08:00:00.000Z",
    displayColor: "#ff0000",
    ...(i % 3 === 0
      ? {
          description: {
            content: `<p>Read <a href="https://books.example.org/ch${i}">chapter ${i}</a> and answer <strong>all</strong> questions.</p><ul><li>Use a pen</li><li>Max 2 pages</li></ul>`,
            type: "richText",
          },
        }
      : i % 3 === 1
        ? { description: `Plain notes for task ${i}` }
        : {}),
    status: {
      submitted: 0,
      maxSubmissions: 1,
      graded: 0,
      isDraft: false,
      isSubstitutionTeacher: false,
      isFinished: false,
    },
  }));
  return {
    tasks,
    finishedTasks: [
      { id: "done001", name: "Old essay", courseName: "English", dueDate: "2026-10-01T08:00:00.000Z" },
    ],
    courses: [
      { id: "course1", title: "Maths 9b", shortTitle: "Ma", displayColor: "#ff0000" },
      { id: "course2", title: "Biology 9b", shortTitle: "Bi", displayColor: "#00ff00" },
    ],
    rooms: [{ id: "room1", name: "Project room", color: "blue" }],
    news: [
      {
        id: "news1",
        title: "Sports day",
        content:
          '<p>Sports day is on <b>Friday</b>.</p><ul><li>Bring water</li></ul><p>Plan: <a href="https://school.example.org/sports">sports page</a></p>',
        displayAt: "2026-11-20T08:00:00.000Z",
        targetModel: "schools",
        target: { id: "school1", name: "Fake Comprehensive" },
        creator: { id: "teacher1", firstName: "Sam", lastName: "Smith" },
        permissions: ["NEWS_VIEW"],
      },
    ],
    submissions: [
      {
        id: "sub1",
        taskId: "task000",
        submitted: true,
        graded: true,
        grade: 2,
        comment: "<p>My answers are in the <em>attached</em> file.</p>",
        gradeComment: '<p>Well done. See <a href="https://school.example.org/feedback">feedback</a>.</p>',
      },
    ],
    files: {
      "6543210fedcba98765432100": {
        name: "worksheet.pdf",
        type: "application/pdf",
        body: Buffer.from("%PDF-1.4 fake worksheet body ".repeat(2000)),
      },
    },
  };
}

export type FakePortal = ReturnType<typeof createFakePortal>;

/** The portal's HTTP API as its public clients parse it; its mutable state is open to tests. */
export function createFakePortal(deps: { clock: Clock }) {
  let server: Server | null = null;
  /** While set, requests are held until released (lets tests model slow/in-flight pings). */
  let holdGate: { promise: Promise<void>; release: () => void; only: (path: string) => boolean } | null =
    null;
  const portal = {
    /** `jwt:{accountId}:{jti}` → idle deadline (clock ms). */
    sessions: new Map<string, number>(),
    requests: [] as SeenRequest[],
    users: new Map<string, Identity>(),
    data: defaultData() as FakePortalData,
    /** Answer the next N authenticated requests with this status (transient failures). */
    failNext: { count: 0, status: 503 } as { count: number; status: number },
    url: "",
    start,
    stop,
    login,
    logout,
    hold,
  };

  async function start(): Promise<string> {
    server = createServer((req, res) => {
      handle(req, res).catch(() => {
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
    await new Promise<void>((r) => server?.listen(0, "127.0.0.1", r));
    const { port } = server.address() as AddressInfo;
    portal.url = `http://127.0.0.1:${port}`;
    return portal.url;
  }

  async function stop(): Promise<void> {
    holdGate?.release();
    server?.closeAllConnections();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  }

  /** Log a user in: a fresh jti, a session entry with a full idle window, and the JWT. */
  function login(id: Identity, opts: { expInS?: number; iatOffsetS?: number } = {}): string {
    const jti = randomBytes(8).toString("hex");
    const now = Math.floor(deps.clock.now() / 1000) + (opts.iatOffsetS ?? 0);
    portal.users.set(id.userId, id);
    portal.sessions.set(`jwt:${id.accountId}:${jti}`, deps.clock.now() + IDLE_TTL_S * 1000);
    return signJwt({
      accountId: id.accountId,
      userId: id.userId,
      schoolId: "school1",
      roles: ["student"],
      jti,
      iat: now,
      exp: now + (opts.expInS ?? 30 * 86_400),
      aud: "https://portal.example.org",
      iss: "feathers",
      sub: id.accountId,
    });
  }

  /** The browser tab's logout: deletes the shared entry. */
  function logout(token: string): void {
    const c = verifyJwt(token);
    if (c) portal.sessions.delete(`jwt:${c.accountId}:${c.jti}`);
  }

  /** Hold matching requests until the returned function is called. */
  function hold(only: (path: string) => boolean = () => true): () => void {
    let release = () => {};
    const promise = new Promise<void>((r) => {
      release = r;
    });
    holdGate = { promise, release, only };
    return () => {
      holdGate = null;
      release();
    };
  }

  function send(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "content-type": "application/json; charset=utf-8",
      "content-length": Buffer.byteLength(text),
    });
    res.end(text);
  }

  function unauthorized(res: ServerResponse, message: string): void {
    send(res, 401, { type: "UNAUTHORIZED", title: "Unauthorized", message, code: 401 });
  }

  /** Auth as the portal does it: signature, exp, then the session-store entry (which slides). */
  function authenticate(req: IncomingMessage, res: ServerResponse): Record<string, unknown> | null {
    const auth = req.headers.authorization;
    const cookie = /(?:^|;\s*)jwt=([^;]+)/.exec(req.headers.cookie ?? "")?.[1];
    const token = auth?.startsWith("Bearer ") ? auth.slice(7) : cookie;
    if (!token) {
      unauthorized(res, "Unauthorized");
      return null;
    }
    const claims = verifyJwt(token);
    if (!claims || typeof claims.exp !== "number" || claims.exp * 1000 <= deps.clock.now()) {
      unauthorized(res, "Unauthorized");
      return null;
    }
    const key = `jwt:${claims.accountId}:${claims.jti}`;
    const deadline = portal.sessions.get(key);
    if (deadline === undefined || deadline <= deps.clock.now()) {
      portal.sessions.delete(key);
      unauthorized(res, "Session was expired due to inactivity");
      return null;
    }
    portal.sessions.set(key, deps.clock.now() + IDLE_TTL_S * 1000);
    return { ...claims, _token: token };
  }

  function list(res: ServerResponse, url: URL, items: Item[]): void {
    const skip = Number(url.searchParams.get("skip") ?? 0);
    const limit = Number(url.searchParams.get("limit") ?? 10);
    if (!Number.isInteger(skip) || skip < 0 || !Number.isInteger(limit) || limit < 1 || limit > 100) {
      send(res, 400, { type: "API_VALIDATION_ERROR", title: "API Validation Error", code: 400 });
      return;
    }
    send(res, 200, { data: items.slice(skip, skip + limit), total: items.length, skip, limit });
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://fake");
    const path = url.pathname;
    portal.requests.push({ method: req.method ?? "", path, authorization: req.headers.authorization });
    if (holdGate?.only(path)) await holdGate.promise;
    if (req.method === "GET" && path === "/api/v3/config/public") {
      send(res, 200, {
        JWT_TIMEOUT_SECONDS: IDLE_TTL_S,
        JWT_SHOW_TIMEOUT_WARNING_SECONDS: 3600,
        JWT_EXTENDED_TIMEOUT_SECONDS: 2_629_746,
        SC_TITLE: "Fake School Cloud",
      });
      return;
    }
    if (portal.failNext.count > 0) {
      portal.failNext.count -= 1;
      send(res, portal.failNext.status, { code: portal.failNext.status, title: "Unavailable" });
      return;
    }
    const claims = authenticate(req, res);
    if (!claims) return;
    const key = `jwt:${claims.accountId}:${claims.jti}`;
    const m = req.method;
    const courseBoard = /^\/api\/v3\/course-rooms\/([^/]+)\/board$/.exec(path);
    const roomMatch = /^\/api\/v3\/rooms\/([^/]+)(\/boards)?$/.exec(path);
    const newsMatch = /^\/api\/v3\/news\/([^/]+)$/.exec(path);
    const submissionsMatch = /^\/api\/v3\/submissions\/task\/([^/]+)$/.exec(path);
    const fileMatch = /^\/api\/v3\/file\/download\/([^/]+)\/([^/]+)$/.exec(path);
    if (m === "POST" && path === "/api/v3/authentication/refresh-session") {
      const deadline = portal.sessions.get(key) ?? deps.clock.now();
      send(res, 201, { expiresInSeconds: Math.round((deadline - deps.clock.now()) / 1000) });
    } else if (m === "POST" && path === "/api/v3/logout") {
      portal.sessions.delete(key);
      res.writeHead(200).end();
    } else if (m !== "GET") {
      send(res, 405, { code: 405, title: "Method Not Allowed" });
    } else if (path === "/api/v3/me") {
      const u = portal.users.get(String(claims.userId));
      send(res, 200, {
        school: { id: "school1", name: "Fake Comprehensive" },
        user: { id: claims.userId, firstName: u?.firstName ?? "Ada", lastName: u?.lastName ?? "Lovelace" },
        roles: [{ id: "r1", name: "student" }],
        permissions: ["TASK_DASHBOARD_VIEW_V3"],
        account: { id: claims.accountId },
        systemId: null,
      });
    } else if (path === "/api/v3/tasks") {
      list(res, url, portal.data.tasks);
    } else if (path === "/api/v3/tasks/finished") {
      list(res, url, portal.data.finishedTasks);
    } else if (path === "/api/v3/courses") {
      list(res, url, portal.data.courses);
    } else if (courseBoard) {
      const c = portal.data.courses.find((x) => x.id === courseBoard[1]);
      if (!c) send(res, 404, { code: 404, title: "Not Found" });
      else
        send(res, 200, {
          roomId: c.id,
          title: c.title,
          displayColor: c.displayColor,
          elements: [{ type: "task", content: { id: "task000", name: "Task 0" } }],
          isArchived: false,
        });
    } else if (path === "/api/v3/rooms") {
      list(res, url, portal.data.rooms);
    } else if (roomMatch) {
      const r = portal.data.rooms.find((x) => x.id === roomMatch[1]);
      if (!r) send(res, 404, { code: 404, title: "Not Found" });
      else if (roomMatch[2]) list(res, url, [{ id: "board1", title: "Board", layout: "columns" }]);
      else send(res, 200, { ...r, permissions: ["ROOM_VIEW"] });
    } else if (path === "/api/v3/news") {
      list(res, url, portal.data.news);
    } else if (newsMatch) {
      const n = portal.data.news.find((x) => x.id === newsMatch[1]);
      if (!n) send(res, 404, { code: 404, title: "Not Found" });
      else send(res, 200, n);
    } else if (submissionsMatch) {
      send(
        res,
        200,
        portal.data.submissions.filter((x) => x.taskId === submissionsMatch[1]),
      );
    } else if (fileMatch) {
      const f = portal.data.files[fileMatch[1] as string];
      if (!f || decodeURIComponent(fileMatch[2] as string) !== f.name) {
        send(res, 404, { code: 404, title: "Not Found" });
        return;
      }
      const headers = {
        "content-type": f.type,
        "accept-ranges": "bytes",
        "content-disposition": `inline; filename="${f.name}"`,
        "set-cookie": "SERVERID=abc; Path=/",
      };
      const range = /^bytes=(\d+)-(\d*)$/.exec(String(req.headers.range ?? ""));
      if (range) {
        const start = Number(range[1]);
        const end = Math.min(range[2] ? Number(range[2]) : f.body.length - 1, f.body.length - 1);
        if (start > end) {
          res.writeHead(416, { "content-range": `bytes */${f.body.length}` }).end();
          return;
        }
        res.writeHead(206, {
          ...headers,
          "content-length": end - start + 1,
          "content-range": `bytes ${start}-${end}/${f.body.length}`,
        });
        res.end(f.body.subarray(start, end + 1));
        return;
      }
      res.writeHead(200, { ...headers, "content-length": f.body.length });
      res.end(f.body);
    } else {
      send(res, 404, { code: 404, title: "Not Found" });
    }
  }

  return portal;
}
