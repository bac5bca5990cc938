// The bench targets of bench/bridge, each started by the harness in its own process: the fake
// portal (the baseline: what a client reaches without the bridge) and the bridge in front of it.
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "@app/kit/clock";
import { loadEnv } from "@app/kit/config";
import { createLogger } from "@app/kit/logger";
import { buildApp, envSpec } from "@app/portal-bridge";
import { createFakePortal } from "@app/portal-bridge/testing";
import type { ServerTarget } from "../harness/index.js";

export async function startPortal(): Promise<ServerTarget> {
  const portal = createFakePortal({ clock: systemClock });
  await portal.start();
  // Every call slides the idle window, so the session stays alive for the whole bench.
  const token = portal.login({ userId: "u1", accountId: "a1" });
  return { url: portal.url, info: { token }, close: () => portal.stop() };
}

export async function startBridge(args: {
  portalUrl: string;
  token: string;
  auth: string;
}): Promise<ServerTarget> {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-bridge-"));
  // Logs go nowhere but are produced at info level, as in production.
  const logger = createLogger({ name: "bench", level: "info", stream: { write: () => {} } });
  const config = loadEnv(envSpec, {
    DATA_DIR: dataDir,
    MCP_AUTH_TOKEN: args.auth,
    PORTAL_BASE_URL: args.portalUrl,
    PORTAL_JWT_COOKIE: args.token,
    KEEPALIVE_INTERVAL_MS: "0",
    MCP_MAX_SESSIONS: "200",
    // 50 concurrent clients share one secret: the per-credential cap must not evict them.
    MCP_MAX_SESSIONS_PER_CREDENTIAL: "200",
  });
  const built = await buildApp(config, { logger });
  await built.app.listen({ port: 0, host: "127.0.0.1" });
  return {
    url: `http://127.0.0.1:${(built.app.server.address() as AddressInfo).port}`,
    close: async () => {
      await built.app.close();
      await built.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
