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

const isInit = (body: unknown): boolean =>
  Array.isArray(body) ? body.some((m) => isInitializeRequest(m)) : isInitializeRequest(body);

export function mcpHandler(deps: McpHandlerDeps) {
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
      const session = await deps.sessions.create();
      try {
        await serve(req, reply, session);
      } finally {
        deps.sessions.abandon(session);
      }
      return;
    }
    if (req.method === "POST") return serveStateless(req, reply, deps);
    throw new AppError(
      400,
      "session_required",
      "This request needs an mcp-session-id header from an initialized session.",
    );
  };
}

async function serve(req: FastifyRequest, reply: FastifyReply, session: Session): Promise<void> {
  session.active += 1;
  reply.raw.once("close", () => {
    session.active -= 1;
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

async function serveStateless(req: FastifyRequest, reply: FastifyReply, deps: McpHandlerDeps): Promise<void> {
  const server = deps.makeServer();
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: undefined,
    enableJsonResponse: true,
  });
  reply.raw.once("close", () => {
    void server.close().catch(() => undefined);
  });
  await server.connect(transport);
  reply.hijack();
  await handleHijacked(req, reply, () => transport.handleRequest(req.raw, reply.raw, req.body));
}
