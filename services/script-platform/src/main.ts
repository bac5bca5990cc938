#!/usr/bin/env node
import { runMain, serveApp } from "@app/kit/cli";
import { buildApp } from "./app.js";
import { envSpec } from "./config.js";
import { ADMIN_CLI_USAGE, readPipedStdin, runAdminCli } from "./control/admin-cli.js";

await runMain({
  title: "script-platform: multi-app runtime for sandboxed user scripts",
  usage: "node services/script-platform/dist/main.js [--help] [admin reset-password <username>]",
  extraHelp: `Subcommands:\n  ${ADMIN_CLI_USAGE}`,
  spec: envSpec,
  start: async (config, argv) => {
    if (argv.length > 0) {
      const code = await runAdminCli(config, argv, {
        readStdin: readPipedStdin,
        out: (l) => process.stdout.write(`${l}\n`),
        err: (l) => process.stderr.write(`${l}\n`),
      });
      process.exit(code);
    }
    await serveApp("script-platform", config, (logger) => buildApp(config, { logger }));
  },
});
