#!/usr/bin/env node
import { runMain, serveApp } from "@app/kit/cli";
import { buildApp } from "./app.js";
import { envSpec } from "./config.js";

await runMain({
  title: "event-gallery: photo and video sharing for one event",
  usage: "node services/event-gallery/dist/main.js [--help]",
  spec: envSpec,
  start: async (config) => {
    await serveApp("event-gallery", config, (logger) => buildApp(config, { logger }));
  },
});
