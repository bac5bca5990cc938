import type { AddressInfo } from "node:net";
import { FakeClock } from "@app/kit/clock";
import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type BuiltApp, buildApp } from "../src/app.js";
import { envSpec } from "../src/config.js";
import { createFakePortal, type FakePortal } from "../src/testing/fake-portal.js";
import { FakeTimetable, timetableEnv } from "./fakes/timetable.js";

export const AUTH = "a".repeat(24) + "0123456789abcdef0123456789abcdef";
export const CONNECTOR = "c".repeat(16) + "fedcba9876543210fedcba9876543210";
export const PATH_SECRET = "p4th-s3cret_" + "x".repeat(28);

export interface Harness {
  built: BuiltApp;
  clock: FakeClock;
  portal: FakePortal;
  logs: ReturnType<typeof captureLogger>;
  dataDir: string;
  /** The token the bridge started with (from PORTAL_JWT_COOKIE), or null. */
  token: string | null;
  /** http://127.0.0.1:port once listen() ran. */
  url: string;
  listen(): Promise<string>;
  close(): Promise<void>;
}

export interface HarnessOptions {
  env?: Record<string, string | undefined>;
  /** Log in a user on the fake portal and start the bridge with that token (default true). */
  withToken?: boolean;
  clock?: FakeClock;
  portalUrl?: boolean;
  /** Runs before the app is built (e.g. to write a saved token into dataDir). */
  before?: (ctx: { dataDir: string; portal: FakePortal; clock: FakeClock }) => Promise<void> | void;
}

export const USER = { userId: "user-1", accountId: "acct-1", firstName: "Ada", lastName: "Lovelace" };

export async function startHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const clock = opts.clock ?? new FakeClock("2026-11-23T07:00:00.000Z");
  const env = await createTestEnv("portal_bridge");
  const portal = createFakePortal({ clock: clock });
  await portal.start();
  const token = opts.withToken === false ? null : portal.login(USER);
  await opts.before?.({ dataDir: env.dataDir, portal, clock });
  const logs = captureLogger();
  const config = loadEnv(envSpec, {
    DATA_DIR: env.dataDir,
    MCP_AUTH_TOKEN: AUTH,
    PORTAL_BASE_URL: opts.portalUrl === false ? undefined : portal.url,
    ...(token ? { PORTAL_JWT_COOKIE: token } : {}),
    ...opts.env,
  });
  const built = await buildApp(config, { logger: logs.logger, clock });
  await built.keepalive.settled();
  const h: Harness = {
    built,
    clock,
    portal,
    logs,
    dataDir: env.dataDir,
    token,
    url: "",
    async listen() {
      await built.app.listen({ port: 0, host: "127.0.0.1" });
      const { port } = built.app.server.address() as AddressInfo;
      h.url = `http://127.0.0.1:${port}`;
      return h.url;
    },
    async close() {
      await built.app.close();
      await built.close();
      await portal.stop();
      await env.cleanup();
    },
  };
  return h;
}

/** An MCP client from the official SDK, connected to the bridge. */
export async function mcpClient(
  url: string,
  headers: Record<string, string> = { authorization: `Bearer ${AUTH}` },
) {
  const client = new Client({ name: "test-client", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  await client.connect(transport);
  /** Ends the session on the bridge (DELETE), then the client. */
  const close = async () => {
    await transport.terminateSession().catch(() => undefined);
    await client.close();
  };
  return { client, transport, close };
}

/** The text content of a tool result. */
export function textOf(result: unknown): string {
  const content = (result as { content?: { type: string; text?: string }[] }).content ?? [];
  return content.map((c) => c.text ?? "").join("\n");
}

/** A parent's WebUntis key (LEGAL_GUARDIAN with two children) behind a listening bridge. */
export async function parentBridge(at: string, env: Record<string, string> = {}) {
  const clock = new FakeClock(at);
  const fake = new FakeTimetable(clock);
  fake.account = "parent";
  await fake.start();
  const h = await startHarness({ clock, env: { ...timetableEnv(fake.url), ...env } });
  await h.listen();
  return { h, fake, clock };
}

/** A raw MCP POST (JSON-RPC body) with a secret and, after initialize, the session id. */
export const mcpPost = (url: string, secret: string, body: unknown, sid?: string) =>
  fetch(url, {
    method: "POST",
    headers: {
      authorization: `Bearer ${secret}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(sid ? { "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" } : {}),
    },
    body: JSON.stringify(body),
  });
