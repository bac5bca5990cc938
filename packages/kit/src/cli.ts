import { readFileSync } from "node:fs";
import type { FastifyInstance } from "fastify";
import { type BackupSpec, runBackupCommand } from "./backup.js";
import { formatBanner } from "./banner.js";
import { ConfigError, type EnvSpec, type EnvValues, formatHelp, loadEnv } from "./config.js";
import { startServer } from "./http/server.js";
import { createLogger, type Logger } from "./logger.js";

/** The `version` of the package.json one folder above `moduleUrl` (src/ and dist/ both sit there). */
export function packageVersion(moduleUrl: string | URL): string {
  return (JSON.parse(readFileSync(new URL("../package.json", moduleUrl), "utf8")) as { version: string })
    .version;
}

/**
 * Entry point for a service's main.ts: `--help` prints the variables from the same spec that
 * validates them; `--version` prints the version; `backup --to FILE` / `restore --from FILE`
 * run when `backup` describes the data (exit 0, or 1 with one line); a config error prints one
 * line naming the variable and exits 2.
 */
export async function runMain<S extends EnvSpec>(opts: {
  title: string;
  usage: string;
  spec: S;
  extraHelp?: string;
  argv?: string[];
  /** `<name> <version>` for `--version`. */
  version?: { name: string; version: string };
  /** What a backup holds, from the validated configuration. */
  backup?: (config: EnvValues<S>) => BackupSpec;
  start: (config: EnvValues<S>, argv: string[]) => Promise<void>;
}): Promise<void> {
  const argv = opts.argv ?? process.argv.slice(2);
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(formatHelp(opts.title, opts.usage, opts.spec, opts.extraHelp));
    return;
  }
  if (opts.version && (argv[0] === "--version" || argv[0] === "-v")) {
    process.stdout.write(`${opts.version.name} ${opts.version.version}\n`);
    return;
  }
  let config: EnvValues<S>;
  try {
    config = loadEnv(opts.spec);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  if (opts.backup && (argv[0] === "backup" || argv[0] === "restore")) {
    const code = await runBackupCommand(argv, opts.backup(config));
    process.exit(code ?? 1);
  }
  try {
    await opts.start(config, argv);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    process.stderr.write(`fatal: ${(err as Error)?.message ?? String(err)}\n`);
    process.exit(1);
  }
}

/**
 * Build the app with a logger made from the shared variables, listen, print the first-run banner
 * (plain text on stdout, whatever LOG_FORMAT says), and stop cleanly on signals.
 */
export async function serveApp(
  name: string,
  config: { HOST: string; PORT: number; LOG_LEVEL: string; LOG_FORMAT: "json" | "pretty" },
  build: (logger: Logger) => Promise<{
    app: FastifyInstance;
    close(): Promise<void>;
    /** Banner rows once the URL is known (where to log in, a generated password). */
    banner?(url: string): readonly (readonly [string, string])[];
  }>,
  version = "",
): Promise<void> {
  const logger = createLogger({ name, level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const built = await build(logger);
  const server = await startServer(built.app, {
    host: config.HOST,
    port: config.PORT,
    logger,
    onClose: built.close,
  });
  process.stdout.write(
    formatBanner({ service: name, version, url: server.url, rows: built.banner?.(server.url) ?? [] }),
  );
}
