import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type FastifyServerOptions,
  LogController,
} from "fastify";
import { DatabaseUnavailableError, isDatabaseUnavailable } from "../db/outage.js";
import { AppError } from "../errors.js";
import { newId } from "../ids.js";
import type { Logger } from "../logger.js";
import { closeAllSse } from "./sse.js";
import { installZodCompilers } from "./typed-routes.js";

export interface HttpAppOptions {
  logger: Logger;
  /** Default JSON/text body limit in bytes (routes may set their own). */
  bodyLimit?: number;
  /**
   * A URL whose percent-encoding is malformed never reaches a route: it gets 400 `invalid_url`,
   * or 404 `not_found` when this returns true for the raw URL (the gallery hides /media/ that way).
   */
  badUrlIsNotFound?: (rawUrl: string) => boolean;
  /**
   * Parse every JSON response against its declared zod schema and answer 500 on a mismatch.
   * Default: on under tests (NODE_ENV=test, which Vitest sets), off in production.
   */
  checkResponses?: boolean;
  /** Extra Fastify options (e.g. routerOptions). */
  fastify?: Partial<FastifyServerOptions>;
}

const STATUS_CODES: Record<number, string> = {
  400: "bad_request",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  405: "not_found",
  406: "not_acceptable",
  408: "request_timeout",
  409: "conflict",
  411: "length_required",
  413: "payload_too_large",
  414: "uri_too_long",
  415: "unsupported_media_type",
  416: "range_not_satisfiable",
  422: "validation_failed",
  429: "rate_limited",
  431: "headers_too_large",
  503: "unavailable",
};

/** Map any thrown value to `{status, body, headers}` in the common error shape. */
export function toErrorResponse(err: unknown): {
  status: number;
  body: { error: Record<string, unknown> };
  headers: Record<string, string>;
} {
  if (err instanceof AppError) return { status: err.status, body: err.toBody(), headers: err.headers };
  // A driver error that reached a route unmapped (a pool query, a lost WAL sync): still a 503.
  if (isDatabaseUnavailable(err)) {
    const e = new DatabaseUnavailableError();
    return { status: e.status, body: e.toBody(), headers: e.headers };
  }
  const e = err as Partial<FastifyError> & { validation?: { instancePath?: string; message?: string }[] };
  if (e?.validation) {
    const v = e.validation[0];
    const field = (v?.instancePath ?? "").replace(/^\//, "").replace(/\//g, ".") || null;
    return {
      status: 422,
      body: { error: { code: "validation_failed", message: "The request is invalid.", field } },
      headers: {},
    };
  }
  const code = e?.code ?? "";
  if (
    err instanceof SyntaxError ||
    code === "FST_ERR_CTP_INVALID_JSON_BODY" ||
    code === "FST_ERR_CTP_EMPTY_JSON_BODY"
  ) {
    return {
      status: 400,
      body: { error: { code: "invalid_json", message: "The body is not valid JSON." } },
      headers: {},
    };
  }
  if (code === "FST_ERR_CTP_BODY_TOO_LARGE" || e?.statusCode === 413) {
    return {
      status: 413,
      body: { error: { code: "payload_too_large", message: "The request body is too large." } },
      headers: {},
    };
  }
  if (code === "FST_ERR_CTP_INVALID_MEDIA_TYPE") {
    return {
      status: 415,
      body: { error: { code: "unsupported_media_type", message: "This content type is not accepted here." } },
      headers: {},
    };
  }
  const status = typeof e?.statusCode === "number" ? e.statusCode : 500;
  if (status >= 400 && status < 500) {
    const c = STATUS_CODES[status] ?? "bad_request";
    return {
      status: status === 405 ? 404 : status,
      body: { error: { code: c, message: "The request was not accepted." } },
      headers: {},
    };
  }
  if (status === 503) {
    return {
      status,
      body: {
        error: { code: "unavailable", message: "Service unavailable; try again shortly.", retry_after_s: 5 },
      },
      headers: { "retry-after": "5" },
    };
  }
  return {
    status: 500,
    body: { error: { code: "internal_error", message: "Internal server error." } },
    headers: {},
  };
}

const REQUEST_ID_RE = /^[A-Za-z0-9._-]{8,64}$/;

/** Probes and scrapes: logged at debug, so an info log shows the traffic people make. */
const PROBE_ROUTES = new Set(["/healthz", "/readyz", "/metrics"]);
/** Route label of requests that matched no route (never the raw path: it may hold ids or secrets). */
export const UNMATCHED_ROUTE = "(unmatched)";

/**
 * The one log line of a request (the common contract): method, route pattern (never the raw path:
 * paths can carry secrets and tokens), status, duration. Written when the response finished;
 * hijacked replies (SSE, MCP streams) get it when their stream closes.
 */
export function logRequest(req: FastifyRequest, status: number, durationMs: number): void {
  const route = req.routeOptions.url ?? UNMATCHED_ROUTE;
  const probe = PROBE_ROUTES.has(route);
  // Through the app's logger with the request id as the line's first field: the same JSON text
  // as through the request's child logger, without building that child for every request.
  const parent = (req.log as Partial<LazyChild>)[PARENT_LOGGER];
  if (parent) {
    if (!parent.isLevelEnabled(probe ? "debug" : "info")) return;
    const line = {
      reqId: req.id,
      method: req.method,
      route,
      status,
      duration_ms: Math.round(durationMs * 10) / 10,
    };
    if (probe) parent.debug(line, "request");
    else parent.info(line, "request");
    return;
  }
  const line = { method: req.method, route, status, duration_ms: Math.round(durationMs * 10) / 10 };
  if (probe) req.log.debug(line, "request");
  else req.log.info(line, "request");
}

const PARENT_LOGGER = Symbol("parentLogger");
const LOG_METHODS = ["fatal", "error", "warn", "info", "debug", "trace"] as const;
type LazyChild = Logger & { [PARENT_LOGGER]: Logger };

/**
 * `req.log` as a child logger made on first use: pino builds a child's bindings text (through
 * redaction) when it is created, and most requests log nothing but their one line, which
 * logRequest writes through the parent. Reads of anything else (level, bindings) see the parent's.
 */
function lazyChildLogger(logger: Logger, bindings: Record<string, unknown>, opts: object): Logger {
  let real: Logger | null = null;
  const child = () => {
    real ??= logger.child(bindings, opts);
    return real;
  };
  const lazy = Object.create(logger) as LazyChild;
  // A route's own log level applies to its child: its request line goes through that child.
  if (!("level" in opts)) lazy[PARENT_LOGGER] = logger;
  for (const m of LOG_METHODS)
    (lazy as unknown as Record<string, unknown>)[m] = (...args: unknown[]) =>
      (child()[m] as (...a: unknown[]) => void)(...args);
  lazy.child = ((b: Record<string, unknown>, o?: object) => child().child(b, o)) as Logger["child"];
  lazy.bindings = () => child().bindings();
  return lazy;
}

/** A Fastify app with the shared error shape, request ids, one path-free log line per request and SSE shutdown. */
export function createHttpApp(opts: HttpAppOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: opts.logger.child(
      {},
      {
        // Fastify's own request/response lines are off (logRequest writes the one line); these
        // keep any other line that carries a request free of paths and query strings.
        serializers: {
          req: (req: { method?: string }) => ({ method: req.method }),
          res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
        },
      },
    ),
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger, bindings, childOpts) =>
      lazyChildLogger(logger as Logger, bindings, childOpts),
    bodyLimit: opts.bodyLimit ?? 1024 * 1024,
    genReqId: (req) => {
      const h = req.headers["x-request-id"];
      return typeof h === "string" && REQUEST_ID_RE.test(h) ? h : newId();
    },
    forceCloseConnections: "idle",
    // Node's HTTP parser refused the bytes (a badly chunked body, a malformed header): answer in
    // the common error shape instead of Fastify's own, then close, as the stream is out of sync.
    clientErrorHandler: (err, socket) => {
      if (!socket.writable || (err as NodeJS.ErrnoException).code === "ECONNRESET") return socket.destroy();
      const body = JSON.stringify({
        error: { code: "invalid_body", message: "The request could not be parsed as HTTP." },
      });
      socket.end(
        `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
      );
    },
    return503OnClosing: true,
    // Fastify's own answer to a malformed URL repeats the path back and is not our error shape.
    frameworkErrors: (err, req, rawReply) => {
      const reply = rawReply as unknown as FastifyReply;
      if (err.code === "FST_ERR_BAD_URL") {
        const notFound = opts.badUrlIsNotFound?.(req.url ?? "") ?? false;
        const body = notFound
          ? { error: { code: "not_found", message: "Not found." } }
          : { error: { code: "invalid_url", message: "The request URL is not valid." } };
        return reply
          .code(notFound ? 404 : 400)
          .type("application/json")
          .send(body);
      }
      const { status, body, headers } = toErrorResponse(err);
      for (const [k, v] of Object.entries(headers)) reply.header(k, v);
      return reply.code(status).type("application/json").send(body);
    },
    ...opts.fastify,
  }) as unknown as FastifyInstance;

  // Route schemas are zod (typed-routes.ts); their failures map to the errors below.
  installZodCompilers(app, { checkResponses: opts.checkResponses ?? process.env.NODE_ENV === "test" });

  // Callback style: an async hook costs a promise and its resolution turn on every request.
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id);
    reply.header("x-content-type-options", "nosniff");
    done();
  });
  app.addHook("onResponse", (req, reply, done) => {
    logRequest(req, reply.statusCode, reply.elapsedTime);
    done();
  });

  app.setErrorHandler((err, req, reply) => {
    const { status, body, headers } = toErrorResponse(err);
    // Outages are logged once by the database layer (db/outage.ts), not per request.
    if (status >= 500 && status !== 503 && !(err instanceof AppError))
      req.log.error({ err }, "request failed");
    for (const [k, v] of Object.entries(headers)) reply.header(k, v);
    return reply.code(status).type("application/json").send(body);
  });

  app.setNotFoundHandler((_req, reply) =>
    reply
      .code(404)
      .type("application/json")
      .send({ error: { code: "not_found", message: "Not found." } }),
  );

  app.addHook("preClose", async () => closeAllSse(app));
  return app;
}

/** `GET /healthz` → 200 `ok` text/plain, no auth (the common contract). */
export function registerHealth(app: FastifyInstance): void {
  app.get("/healthz", async (_req, reply) => reply.type("text/plain; charset=utf-8").send("ok"));
}
