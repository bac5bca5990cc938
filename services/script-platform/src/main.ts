#!/usr/bin/env node
import { BACKUP_USAGE } from "@app/kit/backup";
import { runMain, serveApp } from "@app/kit/cli";
import { buildApp } from "./app.js";
import { envSpec } from "./config.js";
import { ADMIN_CLI_USAGE, readPipedStdin, runAdminCli } from "./control/admin-cli.js";
import { PRODUCT_VERSION } from "./version.js";

await runMain({
  title: "script-platform: multi-app runtime for sandboxed user scripts",
  usage:
    "node services/script-platform/dist/main.js [--help] [--version] [admin reset-password <username>] [backup --to FILE | restore --from FILE]",
  extraHelp: `Subcommands:\n  ${[ADMIN_CLI_USAGE, ...BACKUP_USAGE].join("\n  ")}`,
  spec: envSpec,
  version: { name: "script-platform", version: PRODUCT_VERSION },
  backup: (config) => ({
    service: "script-platform",
    version: PRODUCT_VERSION,
    dataDir: config.DATA_DIR,
    backend: config.DATABASE_URL ? "postgres" : "sqlite",
    sqliteFiles: ["platform.sqlite"],
  }),
  start: async (config, argv) => {
    if (argv.length > 0) {
      const code = await runAdminCli(config, argv, {
        readStdin: readPipedStdin,
        out: (l) => process.stdout.write(`${l}\n`),
        err: (l) => process.stderr.write(`${l}\n`),
      });
      process.exit(code);
    }
    await serveApp("script-platform", config, (logger) => buildApp(config, { logger }), PRODUCT_VERSION);
  },
});
