#!/usr/bin/env node
import { runMain } from "@app/kit/cli";
import { startServer } from "@app/kit/http";
import { createLogger } from "@app/kit/logger";
import { buildApp } from "./app.js";
import { envSpec } from "./config.js";

await runMain({
  title: "portal-bridge: MCP gateway to one school-portal account and a timetable service",
  usage: "node services/portal-bridge/dist/main.js [--help]",
  spec: envSpec,
  start: async (config) => {
    const logger = createLogger({
      name: "portal-bridge",
      level: config.LOG_LEVEL,
      format: config.LOG_FORMAT,
    });
    const built = await buildApp(config, { logger });
    await startServer(built.app, { host: config.HOST, port: config.PORT, logger, onClose: built.close });
  },
});
