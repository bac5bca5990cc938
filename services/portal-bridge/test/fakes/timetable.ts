import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Clock } from "@app/kit/clock";
import { base32Decode, totp } from "../../src/upstream/totp.js";

/**
 * A faithful fake of the WebUntis mobile JSON-RPC endpoint: `POST /WebUntis/jsonrpc_intern.do`
 * with `m`, `school` and `v` query parameters, per-request TOTP checked against the server's
 * own clock, -8524 (with data.serverTime) for a client time that drifts, and the five read
 * methods with canned data. Records every call.
 */
export const TT_SECRET = "JBSWY3DPEHPK3PXP"; // a 10-byte key, like the ones the service issues
export const TT_SCHOOL = "demo-school";
export const TT_USER = "ada.lovelace";
const MAX_SKEW_MS = 60_000;

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
    send(200, { id, jsonrpc: "2.0", result });
  }

  private result(method: string, params: Record<string, unknown>): unknown {
    switch (method) {
      case "getUserData2017":
        return {
          masterData: {
            subjects: [
              { id: 1, name: "Ma", longName: "Mathematics" },
              { id: 2, name: "Bi", longName: "Biology" },
            ],
            rooms: [
              { id: 10, name: "R101" },
              { id: 11, name: "R202" },
            ],
            teachers: [
              { id: 20, name: "SMI" },
              { id: 21, name: "JON" },
            ],
            klassen: [{ id: 30, name: "9b" }],
          },
          userData: {
            elemType: "STUDENT",
            elemId: 4711,
            displayName: "Ada Lovelace",
            schoolName: "Demo School",
          },
          settings: {},
        };
      case "getTimetable2017": {
        const d = String(params.startDate);
        return {
          timetable: {
            displayableStartDate: d,
            displayableEndDate: params.endDate,
            periods: [
              {
                id: 1,
                startDateTime: `${d}T09:45Z`,
                endDateTime: `${d}T10:30Z`,
                elements: [
                  { type: "SUBJECT", id: 2, orgId: 0 },
                  { type: "ROOM", id: 11, orgId: 10 },
                  { type: "TEACHER", id: 20, orgId: 0 },
                  { type: "CLASS", id: 30, orgId: 0 },
                ],
                is: ["STANDARD"],
                text: { lesson: "", substitution: "", info: "" },
              },
              {
                id: 2,
                startDateTime: `${d}T08:00Z`,
                endDateTime: `${d}T08:45Z`,
                elements: [
                  { type: "SUBJECT", id: 1, orgId: 0 },
                  { type: "ROOM", id: 10, orgId: 0 },
                  { type: "TEACHER", id: 21, orgId: 20 },
                ],
                is: ["SUBSTITUTION"],
                text: { substitution: "Vertretung" },
              },
              {
                id: 3,
                startDateTime: `${d}T11:00Z`,
                endDateTime: `${d}T11:45Z`,
                elements: [{ type: "SUBJECT", id: 1, orgId: 0 }],
                is: ["CANCELLED"],
                text: { info: "Teacher ill" },
              },
            ],
          },
        };
      }
      case "getHomeWork2017":
        return {
          homeWorks: [
            {
              id: 1,
              lessonId: 5,
              startDate: "2026-11-20",
              endDate: "2026-11-25",
              text: "Exercise 4",
              completed: false,
            },
          ],
          lessons: [{ id: 5, subject: "Ma" }],
        };
      case "getExams2017":
        return {
          exams: [
            {
              id: 9,
              examType: "Klassenarbeit",
              startDateTime: "2026-11-24T08:00Z",
              subjectId: 2,
              name: "Cells test",
              text: "",
            },
          ],
        };
      case "getMessagesOfDay2017":
        return {
          messageOfDayCollection: {
            messages: [{ id: 1, subject: "Snow", body: "<p>School opens at <b>10</b>.</p>" }],
          },
        };
      default:
        return undefined;
    }
  }
}
