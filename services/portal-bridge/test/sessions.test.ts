import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH, CONNECTOR, type Harness, mcpPost, startHarness } from "./helpers.js";

/** Clients that never close sessions (Inspector CLI, conformance runs) cannot lock the owner out. */
describe("MCP session caps per credential", () => {
  let h: Harness;
  let url: string;
  beforeAll(async () => {
    h = await startHarness({
      env: { MCP_CONNECTOR_TOKEN: CONNECTOR, MCP_MAX_SESSIONS: "10", MCP_MAX_SESSIONS_PER_CREDENTIAL: "2" },
    });
    url = `${await h.listen()}/mcp`;
  });
  afterAll(async () => h.close());

  const post = (secret: string, body: unknown, sid?: string) => mcpPost(url, secret, body, sid);
  const init = async (secret: string) => {
    const res = await post(secret, {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "leaky", version: "1" },
      },
    });
    expect(res.status).toBe(200);
    await h.clock.advance(1000);
    return res.headers.get("mcp-session-id") as string;
  };
  const list = (secret: string, sid: string) =>
    post(secret, { jsonrpc: "2.0", id: 2, method: "tools/list" }, sid);

  it("a credential at its cap evicts only its own least recently used idle session", async () => {
    const owner = await init(AUTH);
    const leaked = [
      await init(CONNECTOR),
      await init(CONNECTOR),
      await init(CONNECTOR),
      await init(CONNECTOR),
    ];
    expect(h.built.sessions.countFor("connector")).toBe(2);
    expect(h.built.sessions.countFor("auth")).toBe(1);
    expect((await list(CONNECTOR, leaked[0] as string)).status).toBe(404);
    expect((await list(CONNECTOR, leaked[1] as string)).status).toBe(404);
    expect((await list(CONNECTOR, leaked[3] as string)).status).toBe(200);
    // The owner's session, older than all of them, is untouched.
    expect((await list(AUTH, owner)).status).toBe(200);
  });
});
