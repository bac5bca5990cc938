#!/usr/bin/env node
import { runMain, serveApp } from "@app/kit/cli";
import { buildApp } from "./app.js";
import { envSpec } from "./config.js";

await runMain({
  title: "portal-bridge: MCP gateway to one school-portal account and a timetable service",
  usage: "node services/portal-bridge/dist/main.js [--help]",
  spec: envSpec,
  start: async (config) => {
    await serveApp("portal-bridge", config, (logger) => buildApp(config, { logger }));
  },
});
