import { AppError, unavailable } from "@app/kit/errors";
import type { JobOutcome } from "./executor.js";

export interface HttpAnswer {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers a script may not set: the server owns framing and connection handling. */
const RESERVED_HEADERS = new Set([
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "trailer",
]);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) && !(v instanceof Uint8Array);
}

function bodyOf(value: unknown, headers: Record<string, string>): string | Buffer {
  if (value instanceof Uint8Array) {
    headers["content-type"] ??= "application/octet-stream";
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  }
  if (typeof value === "string") {
    headers["content-type"] ??= "text/plain; charset=utf-8";
    return value;
  }
  headers["content-type"] ??= "application/json; charset=utf-8";
  return JSON.stringify(value === undefined ? null : value);
}

/**
 * The result convention (contract "Result"): an object with a numeric statusCode is a structured
 * response (headers and body optional; an object body is JSON, a string text/plain, bytes
 * application/octet-stream); anything else is a 200 with the value as the body (a string as
 * text/plain, everything else JSON).
 */
export function toHttpAnswer(value: unknown): HttpAnswer {
  const headers: Record<string, string> = {};
  if (isPlainObject(value) && typeof value.statusCode === "number") {
    const s = value.statusCode;
    const status = Number.isInteger(s) && s >= 200 && s <= 599 ? s : 500;
    if (isPlainObject(value.headers))
      for (const [k, v] of Object.entries(value.headers)) {
        const name = k.toLowerCase();
        if (!HEADER_NAME.test(k) || RESERVED_HEADERS.has(name)) continue;
        if (typeof v === "string" || typeof v === "number") headers[name] = String(v).replace(/[\r\n]/g, " ");
      }
    if (value.body === undefined || value.body === null) return { status, headers, body: "" };
    return { status, headers, body: bodyOf(value.body, headers) };
  }
  return { status: 200, headers, body: bodyOf(value, headers) };
}

/**
 * How a failed synchronous run answers (the seed leaves the mapping open):
 * - 504 `timeout`: the script ran past timeout_seconds (or no result within timeout + 2 s);
 * - 507 `operation_limit`, `size_limit`, `call_depth_limit`: a sandbox limit ended the run;
 * - 502 `script_error`: the script threw or rejected (the message names the script's error, never
 *   host internals), or its imports cannot be resolved;
 * - 503 `busy` (with Retry-After): no run slot / inbox free (PLATFORM_MAX_CONCURRENCY), and
 *   `database_busy` from the database layer;
 * - 500 `internal_error`: the host failed.
 */
export function failureError(outcome: Extract<JobOutcome, { ok: false }>): AppError {
  switch (outcome.kind) {
    case "timeout":
      return new AppError(504, "timeout", outcome.message);
    case "operation_limit":
    case "size_limit":
    case "call_depth_limit":
      return new AppError(507, outcome.kind, outcome.message);
    case "script_error":
      return new AppError(502, "script_error", `The script failed: ${outcome.message}`);
    case "busy":
      return unavailable(1, outcome.message, "busy");
    case "script_not_found":
      return new AppError(404, "script_not_found", "The script does not exist.");
    default:
      return new AppError(500, "internal_error", "Internal server error.");
  }
}
