#!/usr/bin/env node
import { BACKUP_USAGE } from "@app/kit/backup";
import { runMain, serveApp } from "@app/kit/cli";
import { buildApp } from "./app.js";
import { envSpec, stateDirOf } from "./config.js";
import { BRIDGE_VERSION } from "./version.js";

const version = BRIDGE_VERSION;

await runMain({
  title: "portal-bridge: MCP gateway to one school-portal account and a timetable service",
  usage:
    "node services/portal-bridge/dist/main.js [--help] [--version] [backup --to FILE | restore --from FILE]",
  extraHelp: `Subcommands:\n  ${BACKUP_USAGE.join("\n  ")}`,
  spec: envSpec,
  version: { name: "portal-bridge", version },
  // The bridge keeps no database: its state (token, OAuth clients) is files in STATE_DIR.
  backup: (config) => ({
    service: "portal-bridge",
    version,
    dataDir: stateDirOf(config),
    backend: "sqlite",
    sqliteFiles: [],
  }),
  start: async (config) => {
    await serveApp("portal-bridge", config, (logger) => buildApp(config, { logger }), version);
  },
});
