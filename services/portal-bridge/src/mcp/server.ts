import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { ListToolsRequestSchema, type ListToolsResult } from "@modelcontextprotocol/sdk/types.js";
import { registerDeadlinesTool, registerTimetableTools } from "./timetable-tools.js";
import { registerPortalTools, type ToolContext } from "./tools.js";

export const SERVER_INFO = { name: "portal-bridge", version: "0.1.0" };

type ListHandler = (req: unknown, extra: unknown) => ListToolsResult | Promise<ListToolsResult>;

/** Registers tools built outside mcp/ (the digest's whats_new), after the portal and timetable ones. */
export type ToolRegistrar = (server: McpServer) => void;

/**
 * A factory of MCP servers (one per session or stateless request, as the SDK requires). The
 * catalogue is the same for every server, so tools/list is computed once (the SDK converts
 * every zod schema to JSON Schema on each call) and answered from that copy afterwards.
 */
export function mcpServerFactory(ctx: ToolContext, more: readonly ToolRegistrar[] = []): () => McpServer {
  let toolList: Promise<ListToolsResult> | null = null;
  return () => {
    const server = new McpServer(SERVER_INFO, {
      capabilities: { tools: {} },
      instructions:
        "Read-only access to one school-portal account (tasks, courses, rooms, news, any /api/ GET) and, when configured, its timetable (for parent accounts: pass student to pick a child; get_profile lists them). Dates are school-local. Call connection_status when tools report an expired session.",
    });
    registerPortalTools(server, ctx);
    registerTimetableTools(server, ctx);
    registerDeadlinesTool(server, ctx);
    for (const register of more) register(server);
    // The SDK's own handler, kept to compute the list the first time.
    const handlers = (server.server as unknown as { _requestHandlers: Map<string, ListHandler> })
      ._requestHandlers;
    const original = handlers.get("tools/list");
    if (original)
      server.server.setRequestHandler(ListToolsRequestSchema, async (req, extra) => {
        toolList ??= Promise.resolve(original(req, extra)).catch((err) => {
          toolList = null;
          throw err;
        });
        return toolList;
      });
    return server;
  };
}

/** One server (kept for callers that build a single one). */
export function createMcpServer(ctx: ToolContext, more: readonly ToolRegistrar[] = []): McpServer {
  return mcpServerFactory(ctx, more)();
}
