/** Worker thread: the bridge on its own event loop (bench/bridge/run.ts). */
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parentPort, workerData } from "node:worker_threads";
import { loadEnv } from "@app/kit/config";
import { createLogger } from "@app/kit/logger";
import { buildApp } from "../../services/portal-bridge/src/app.js";
import { envSpec } from "../../services/portal-bridge/src/config.js";

const { portalUrl, token, auth } = workerData as { portalUrl: string; token: string; auth: string };
const dataDir = mkdtempSync(join(tmpdir(), "bench-bridge-"));
// Logs go nowhere but are produced at info level, as in production.
const logger = createLogger({ name: "bench", level: "info", stream: { write: () => {} } });
const config = loadEnv(envSpec, {
  DATA_DIR: dataDir,
  MCP_AUTH_TOKEN: auth,
  PORTAL_BASE_URL: portalUrl,
  PORTAL_JWT_COOKIE: token,
  KEEPALIVE_INTERVAL_MS: "0",
  MCP_MAX_SESSIONS: "200",
});
const built = await buildApp(config, { logger });
await built.app.listen({ port: 0, host: "127.0.0.1" });
parentPort?.postMessage({ url: `http://127.0.0.1:${(built.app.server.address() as AddressInfo).port}/mcp` });
parentPort?.on("message", async (m) => {
  if (m === "stop") {
    await built.app.close();
    await built.close();
    rmSync(dataDir, { recursive: true, force: true });
    process.exit(0);
  }
});
