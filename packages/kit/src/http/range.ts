import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import type { FastifyReply } from "fastify";

export type RangeResult =
  | { type: "full" }
  | { type: "partial"; start: number; end: number }
  | { type: "unsatisfiable" };

/**
 * The event-gallery Range rule: `bytes=N-`, `bytes=N-M` and `bytes=-S` give a partial response;
 * a start at or past the end is unsatisfiable (416); a multi-range, another unit or anything
 * malformed gives the full body.
 */
export function parseRange(header: string | undefined, size: number): RangeResult {
  if (header === undefined) return { type: "full" };
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m) return { type: "full" };
  const [, a = "", b = ""] = m;
  if (a === "" && b === "") return { type: "full" };
  if (a === "") {
    const suffix = Number(b);
    if (!Number.isSafeInteger(suffix)) return { type: "full" };
    if (suffix === 0 || size === 0) return { type: "unsatisfiable" };
    return { type: "partial", start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(a);
  if (!Number.isSafeInteger(start)) return { type: "full" };
  if (b !== "") {
    // An end past the file (however many digits) is clamped to the last byte, as RFC 9110 says.
    const end = Number(b);
    if (end < start) return { type: "full" };
    if (start >= size) return { type: "unsatisfiable" };
    return { type: "partial", start, end: Math.min(end, size - 1) };
  }
  if (start >= size) return { type: "unsatisfiable" };
  return { type: "partial", start, end: size - 1 };
}

export interface SendFileOptions {
  path: string;
  contentType: string;
  rangeHeader: string | undefined;
  headers?: Record<string, string>;
  size?: number;
}

/** Stream a file honouring `parseRange`; Accept-Ranges goes on every response. */
export async function sendFileWithRange(reply: FastifyReply, opts: SendFileOptions): Promise<FastifyReply> {
  const size = opts.size ?? (await stat(opts.path)).size;
  reply.header("accept-ranges", "bytes");
  for (const [k, v] of Object.entries(opts.headers ?? {})) reply.header(k, v);
  const range = parseRange(opts.rangeHeader, size);
  if (range.type === "unsatisfiable") {
    return reply
      .code(416)
      .header("content-range", `bytes */${size}`)
      .type("application/json")
      .send({
        error: { code: "range_not_satisfiable", message: "The requested range starts past the end." },
      });
  }
  reply.type(opts.contentType);
  if (range.type === "partial") {
    reply.code(206).header("content-range", `bytes ${range.start}-${range.end}/${size}`);
    reply.header("content-length", String(range.end - range.start + 1));
    return reply.send(createReadStream(opts.path, { start: range.start, end: range.end }));
  }
  reply.code(200).header("content-length", String(size));
  return reply.send(size === 0 ? "" : createReadStream(opts.path));
}
