import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { registerDeadlinesTool, registerTimetableTools } from "./timetable-tools.js";
import { registerPortalTools, type ToolContext } from "./tools.js";

export const SERVER_INFO = { name: "portal-bridge", version: "0.1.0" };

/** One MCP server (tool catalogue) per session or stateless request, as the SDK requires. */
export function createMcpServer(ctx: ToolContext): McpServer {
  const server = new McpServer(SERVER_INFO, {
    capabilities: { tools: {} },
    instructions:
      "Read-only access to one school-portal account (tasks, courses, rooms, news, any /api/ GET) and, when configured, its timetable. Call connection_status when tools report an expired session.",
  });
  registerPortalTools(server, ctx);
  registerTimetableTools(server, ctx);
  registerDeadlinesTool(server, ctx);
  return server;
}
