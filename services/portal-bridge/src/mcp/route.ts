import { AppError } from "@app/kit/errors";
import type { Logger } from "@app/kit/logger";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { Session, SessionStore } from "./sessions.js";

/**
 * MCP Streamable HTTP hosted in Fastify: auth has already run; the SDK transport writes to the
 * raw response after `reply.hijack()`.
 *  - a request with `mcp-session-id` goes to that session (unknown id → 404, so clients
 *    re-initialize);
 *  - an initialize POST without a session id opens a new session (bounded store);
 *  - any other POST without a session id is served statelessly by a throwaway server.
 */
export interface McpHandlerDeps {
  sessions: SessionStore;
  makeServer: () => McpServer;
  logger: Logger;
}

/**
 * The credential a request authenticated with, set by the route's auth hook ("auth",
 * "connector", "path", or an OAuth client's own id): the session registry caps sessions per
 * credential with it. Unset counts as "default".
 */
const credentials = new WeakMap<FastifyRequest, string>();
export function setCredential(req: FastifyRequest, credential: string): void {
  credentials.set(req, credential);
}

/**
 * Stateless calls reuse idle servers: building a server registers every tool again (schemas and
 * all), which costs more than the call itself. A server serves one request at a time; after
 * the answer it is closed (which detaches its transport) and parked for the next call. The pool
 * keeps as many idle servers as were ever busy at once (at least POOL_MIN, at most POOL_MAX),
 * so a steady level of concurrent clients stops building servers once warm.
 */
const POOL_MIN = 16;
const POOL_MAX = 256;

export type ServerPool = ReturnType<typeof createServerPool>;

export function createServerPool(make: () => McpServer) {
  const idle: McpServer[] = [];
  let busy = 0;
  let peak = 0;
  function take(): McpServer {
    busy += 1;
    if (busy > peak) peak = busy;
    return idle.pop() ?? make();
  }
  async function release(server: McpServer): Promise<void> {
    busy -= 1;
    try {
      await server.close();
    } catch {
      return; // a server that failed to close is dropped
    }
    if (idle.length < Math.min(POOL_MAX, Math.max(POOL_MIN, peak))) idle.push(server);
  }

  return {
    take,
    release,
  };
}

const isInit = (body: unknown): boolean =>
  Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);

export function mcpHandler(deps: McpHandlerDeps) {
  const pool = createServerPool(deps.makeServer);
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string" && sid !== "") {
      const session = deps.sessions.get(sid);
      if (!session)
        throw new AppError(
          404,
          "session_not_found",
          "This MCP session does not exist or has expired; initialize a new one.",
        );
      return serve(req, reply, session);
    }
    if (req.method === "POST" && isInit(req.body)) {
      const session = await deps.sessions.create(credentials.get(req) ?? "default");
      try {
        await serve(req, reply, session);
      } finally {
        deps.sessions.abandon(session);
      }
      return;
    }
    if (req.method === "POST") return serveStateless(req, reply, pool);
    throw new AppError(
      400,
      "session_required",
      "This request needs an mcp-session-id header from an initialized session.",
    );
  };
}

async function serve(req: FastifyRequest, reply: FastifyReply, session: Session): Promise<void> {
  // A GET is the session's listening stream: held open, it is not use (see SessionStore).
  const counter = req.method === "GET" ? "streams" : "active";
  session[counter] += 1;
  reply.raw.once("close", () => {
    session[counter] -= 1;
  });
  reply.hijack();
  await handleHijacked(req, reply, () => session.transport.handleRequest(req.raw, reply.raw, req.body));
}

/** After hijack() Fastify's error handler cannot answer; a failure must be answered here. */
async function handleHijacked(
  req: FastifyRequest,
  reply: FastifyReply,
  run: () => Promise<void>,
): Promise<void> {
  try {
    await run();
  } catch (err) {
    req.log.error({ err_name: (err as Error)?.name }, "MCP transport failed");
    if (!reply.raw.headersSent) {
      reply.raw.writeHead(500, { "content-type": "application/json" });
      reply.raw.end(JSON.stringify({ error: { code: "internal_error", message: "Internal server error." } }));
    } else reply.raw.destroy();
  }
}

async function serveStateless(req: FastifyRequest, reply: FastifyReply, pool: ServerPool): Promise<void> {
  const server = pool.take();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  reply.raw.once("close", () => {
    void pool.release(server);
  });
  await server.connect(transport);
  reply.hijack();
  await handleHijacked(req, reply, () => transport.handleRequest(req.raw, reply.raw, req.body));
}
