// The floor for bench/bridge: the smallest server a developer would write with the same SDK
// (@modelcontextprotocol/sdk, the version the bridge uses) and the same tool — `api_get`, which
// GETs a portal path with the bearer token and answers structuredContent plus a text rendering.
// node:http, no framework, no auth, no caps: the SDK's own Streamable HTTP patterns (a session
// map for stateful calls; a new server and transport per request for stateless ones, as the
// SDK's documentation shows). Runs in its own process, started by the harness.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { ServerTarget } from "../harness/index.js";

export async function startMinimal(args: { portalUrl: string; token: string }): Promise<ServerTarget> {
  const makeServer = () => {
    const server = new McpServer({ name: "minimal", version: "1.0.0" });
    server.registerTool(
      "api_get",
      {
        description: "GET a portal API path",
        inputSchema: { path: z.string(), query: z.record(z.string(), z.string()).optional() },
        outputSchema: { path: z.string(), data: z.unknown(), truncated: z.boolean() },
        annotations: { readOnlyHint: true },
      },
      async ({ path, query }) => {
        const url = new URL(args.portalUrl + path);
        for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, v);
        const res = await fetch(url, {
          headers: { authorization: `Bearer ${args.token}`, accept: "application/json" },
        });
        const data = (await res.json()) as unknown;
        const json = JSON.stringify(data);
        return {
          content: [{ type: "text", text: json }],
          structuredContent: { path, data, truncated: false },
        };
      },
    );
    return server;
  };

  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const readJson = async (req: IncomingMessage): Promise<unknown> => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    return chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
  };

  const http = createServer(async (req, res) => {
    const body = req.method === "POST" ? await readJson(req) : undefined;
    const sid = req.headers["mcp-session-id"];
    if (typeof sid === "string") {
      const t = sessions.get(sid);
      if (!t) {
        res.writeHead(404).end();
        return;
      }
      await t.handleRequest(req, res, body);
      return;
    }
    if (isInitializeRequest(body)) {
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => {
          sessions.set(id, transport);
        },
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await makeServer().connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    // Stateless: a new server and transport per request.
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    });
    res.on("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  });
  await new Promise<void>((r) => http.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(http.address() as AddressInfo).port}`,
    close: async () => {
      http.closeAllConnections();
      await new Promise<void>((r) => http.close(() => r()));
    },
  };
}
