import { randomUUID } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import type { FetchFn } from "./portal.js";
import { readCapped } from "./read-capped.js";
import { base32Decode, totp } from "./totp.js";

/**
 * WebUntis mobile JSON-RPC client. Each request carries a fresh TOTP of the client time, so
 * there is no session to keep alive. Only five read methods may be sent; anything else is
 * refused before any network call (the key itself is not read-only).
 */
export const TIMETABLE_METHODS = [
  "getUserData2017",
  "getTimetable2017",
  "getHomeWork2017",
  "getExams2017",
  "getMessagesOfDay2017",
] as const;
export type TimetableMethod = (typeof TIMETABLE_METHODS)[number];

const ERROR_TEXT: Record<number, string> = {
  [-8520]: "authentication required",
  [-8521]:
    "authentication error: the timetable key was refused (a new key from the app's sharing dialog invalidates the old one)",
  [-8509]: "no right: this user may not read that",
  [-7004]: "invalid date",
  [-42003]: "the timetable service is in maintenance; try again later",
};

export type TimetableErrorKind =
  | "refused_method"
  | "invalid_client_time"
  | "rpc"
  | "http"
  | "timeout"
  | "network"
  | "bad_response"
  | "too_large";

export class TimetableError extends Error {
  readonly kind: TimetableErrorKind;
  readonly code: number | null;
  /** For -8524: client time minus server time, in whole seconds. */
  readonly skewS: number | null;
  constructor(
    kind: TimetableErrorKind,
    message: string,
    code: number | null = null,
    skewS: number | null = null,
  ) {
    super(message);
    this.name = "TimetableError";
    this.kind = kind;
    this.code = code;
    this.skewS = skewS;
  }
}

export interface TimetableOptions {
  origin: string;
  school: string;
  user: string;
  secret: string;
  clientVersion: string;
  timeoutMs: number;
  clock: Clock;
  fetch?: FetchFn;
  /** Cap on an answer (UPSTREAM_MAX_BYTES). */
  maxBytes?: number;
}

export type TimetableClient = ReturnType<typeof createTimetableClient>;

export function createTimetableClient(deps: TimetableOptions) {
  const key = base32Decode(deps.secret);
  const fetchFn: FetchFn = deps.fetch ?? fetch;

  /** Call an allowlisted method; `params` are merged with the auth block. */
  async function call<T = unknown>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    if (!(TIMETABLE_METHODS as readonly string[]).includes(method))
      throw new TimetableError(
        "refused_method",
        `The timetable method ${JSON.stringify(method)} is not allowed (read-only allowlist).`,
      );
    const clientTime = deps.clock.now();
    const auth = { user: deps.user, otp: totp(key, clientTime), clientTime };
    const url = new URL("/WebUntis/jsonrpc_intern.do", deps.origin);
    url.searchParams.set("m", method);
    url.searchParams.set("school", deps.school);
    url.searchParams.set("v", deps.clientVersion);
    const body = JSON.stringify({ id: randomUUID(), jsonrpc: "2.0", method, params: [{ ...params, auth }] });
    const ac = new AbortController();
    const timer = deps.clock.setTimeout(() => ac.abort(), deps.timeoutMs);
    let payload: { result?: T; error?: { code?: number; message?: string; data?: { serverTime?: number } } };
    try {
      const res = await fetchFn(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json" },
        body,
        redirect: "manual",
        signal: ac.signal,
      });
      const cap = deps.maxBytes ?? 10 * 1024 * 1024;
      const text = await readCapped(
        res,
        cap,
        () =>
          new TimetableError(
            "too_large",
            `The timetable answer is larger than the bridge reads (UPSTREAM_MAX_BYTES, ${Math.round(cap / 1024)} KiB); ask for a shorter date range.`,
          ),
      );
      if (!res.ok && !text.startsWith("{"))
        throw new TimetableError("http", `The timetable service answered HTTP ${res.status}.`);
      try {
        payload = JSON.parse(text);
      } catch {
        throw new TimetableError("bad_response", "The timetable service sent a response that is not JSON.");
      }
    } catch (err) {
      if (err instanceof TimetableError) throw err;
      if ((err as Error)?.name === "AbortError")
        throw new TimetableError("timeout", "The timetable service did not answer in time.");
      throw new TimetableError("network", "The timetable service could not be reached.");
    } finally {
      timer.cancel();
    }
    if (payload.error) throw rpcError(payload.error, clientTime);
    if (!("result" in payload))
      throw new TimetableError("bad_response", "The timetable answer has no result.");
    return payload.result as T;
  }

  return {
    call,
  };
}

function rpcError(
  e: { code?: number; message?: string; data?: { serverTime?: number } },
  clientTime: number,
): TimetableError {
  const code = typeof e.code === "number" ? e.code : null;
  if (code === -8524) {
    const serverTime = e.data?.serverTime;
    const skew = typeof serverTime === "number" ? Math.round((clientTime - serverTime) / 1000) : null;
    const how =
      skew === null
        ? ""
        : ` The host clock is ${Math.abs(skew)} s ${skew > 0 ? "ahead of" : "behind"} the timetable server;`;
    return new TimetableError(
      "invalid_client_time",
      `Timetable error -8524 invalid client time.${how} fix the host clock (NTP).`,
      code,
      skew,
    );
  }
  const known = code !== null ? ERROR_TEXT[code] : undefined;
  return new TimetableError(
    "rpc",
    `Timetable error ${code ?? "?"}: ${known ?? "unexpected error from the timetable service"}.`,
    code,
  );
}
