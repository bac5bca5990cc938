#!/usr/bin/env node
import { BACKUP_USAGE } from "@app/kit/backup";
import { runMain, serveApp } from "@app/kit/cli";
import { buildApp } from "./app.js";
import { envSpec } from "./config.js";
import { GALLERY_VERSION } from "./version.js";

const version = GALLERY_VERSION;

await runMain({
  title: "event-gallery: photo and video sharing for one event",
  usage:
    "node services/event-gallery/dist/main.js [--help] [--version] [backup --to FILE | restore --from FILE]",
  extraHelp: `Subcommands:\n  ${BACKUP_USAGE.join("\n  ")}`,
  spec: envSpec,
  version: { name: "event-gallery", version },
  backup: (config) => ({
    service: "event-gallery",
    version,
    dataDir: config.DATA_DIR,
    backend: config.DATABASE_URL ? "postgres" : "sqlite",
    sqliteFiles: ["gallery.sqlite"],
  }),
  start: async (config) => {
    await serveApp("event-gallery", config, (logger) => buildApp(config, { logger }), version);
  },
});
