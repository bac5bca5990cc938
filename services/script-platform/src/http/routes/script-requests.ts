import { type AppError, badRequest, notFound } from "@app/kit/errors";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Principal } from "../../control/scopes.js";
import type { ScriptRecord } from "../../control/scripts-repository.js";
import type { RequestView } from "../../execution/executor.js";
import { failureError, toHttpAnswer } from "../../execution/response.js";
import type { Runtime } from "../../execution/runtime.js";

/** Request body cap on user routes and the execute route (seed: 10 MiB). */
export const SCRIPT_BODY_LIMIT = 10 * 1024 * 1024;

/** Path prefixes that are never user routes. */
export function isReservedPath(path: string): boolean {
  return (
    path === "/api" ||
    path.startsWith("/api/") ||
    path === "/admin" ||
    path.startsWith("/admin/") ||
    path === "/healthz" ||
    path === "/readyz" ||
    path === "/metrics" ||
    path === "/version"
  );
}

/**
 * In the encapsulated context of script-serving routes, every body arrives as raw bytes (up to
 * 10 MiB; beyond → 413) and is decoded here by content type: JSON → value (malformed → 400),
 * text-like → string, anything else → Uint8Array, empty → null.
 */
export function acceptRawBodies(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: SCRIPT_BODY_LIMIT }, (_req, body, done) =>
    done(null, body),
  );
}

function decodeBody(req: FastifyRequest): unknown {
  const raw = req.body;
  if (!(raw instanceof Buffer) || raw.length === 0) return null;
  const type = (req.headers["content-type"] ?? "").toLowerCase();
  if (/^application\/([\w.+-]*\+)?json\b/.test(type)) {
    try {
      return JSON.parse(raw.toString("utf8"));
    } catch {
      throw badRequest("invalid_json", "The body is not valid JSON.");
    }
  }
  if (type.startsWith("text/") || type.startsWith("application/x-www-form-urlencoded") || /xml/.test(type))
    return raw.toString("utf8");
  // A copy of exactly these bytes: `raw` may be a view into a larger shared buffer, and the run's
  // ctx is cloned to a worker thread whole (a view would carry its entire backing buffer along).
  return new Uint8Array(raw);
}

const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "x-api-key", "x-auth-token"]);

/**
 * A request target that WHATWG URL parsing would return unchanged as the pathname, with no query:
 * unreserved characters and slashes only, no dot segment, not starting with "//" (which URL reads
 * as a host).
 */
const PLAIN_TARGET = /^\/(?!\/)[A-Za-z0-9_~\-/.]*$/;

/** ctx.request.path and .query of a request target, as `new URL(target, base)` reads them. */
export function pathAndQuery(target: string): { path: string; query: Record<string, string> } {
  // Most script routes are called with a plain path: no URL object to build for those.
  if (PLAIN_TARGET.test(target) && !target.includes("/.")) return { path: target, query: {} };
  const url = new URL(target, "http://x");
  const query: Record<string, string> = {};
  for (const [k, v] of url.searchParams)
    Object.defineProperty(query, k, { value: v, enumerable: true, writable: true, configurable: true });
  return { path: url.pathname, query };
}

/** ctx.request for a script. With an admin principal, the admin's credential headers are withheld. */
export function requestView(
  req: FastifyRequest,
  params: Record<string, string>,
  rest: string,
  principal: Principal | null,
): RequestView {
  const { path, query } = pathAndQuery(req.url);
  const headers: Record<string, string> = {};
  const raw = req.headers;
  for (const k in raw) {
    const v = raw[k];
    if (v === undefined || (principal && CREDENTIAL_HEADERS.has(k))) continue;
    headers[k] = Array.isArray(v) ? v.join(", ") : v;
  }
  // Keys in the order the outbox payload spells them (body last), so a sync run's ctx.request
  // and an async run's (decoded from the payload) enumerate alike.
  return { method: req.method, path, headers, params, query, rest, body: decodeBody(req) };
}

/** Run the script for this request and answer per the result convention and the error mapping. */
export async function serveScript(
  invoke: Runtime["invoke"],
  req: FastifyRequest,
  reply: FastifyReply,
  target: {
    appId: string;
    script: ScriptRecord;
    mode: "sync" | "async";
    params: Record<string, string>;
    rest: string;
    principal: Principal | null;
  },
): Promise<FastifyReply> {
  const result = await invoke({
    appId: target.appId,
    scriptId: target.script.id,
    script: target.script,
    timeoutSeconds: target.script.timeout_seconds,
    mode: target.mode,
    request: requestView(req, target.params, target.rest, target.principal),
    requestId: String(req.id),
    principal: target.principal,
  });
  if (result.kind === "accepted")
    return reply.code(202).send({ accepted_at: result.accepted_at, execution_id: result.execution_id });
  reply.header("x-execution-id", result.execution_id);
  if (!result.outcome.ok) throw failureError(result.outcome);
  const answer = toHttpAnswer(result.outcome.value);
  for (const [k, v] of Object.entries(answer.headers)) reply.header(k, v);
  return reply.code(answer.status).send(answer.body);
}

export function noRoute(): AppError {
  return notFound("No route matches this request.");
}
