import type { FastifyInstance } from "fastify";
import { ConfigError, type EnvSpec, type EnvValues, formatHelp, loadEnv } from "./config.js";
import { startServer } from "./http/server.js";
import { createLogger, type Logger } from "./logger.js";

/**
 * Entry point for a service's main.ts: `--help` prints the variables from the same spec that
 * validates them; a config error prints one line naming the variable and exits 2.
 */
export async function runMain<S extends EnvSpec>(opts: {
  title: string;
  usage: string;
  spec: S;
  extraHelp?: string;
  argv?: string[];
  start: (config: EnvValues<S>, argv: string[]) => Promise<void>;
}): Promise<void> {
  const argv = opts.argv ?? process.argv.slice(2);
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(formatHelp(opts.title, opts.usage, opts.spec, opts.extraHelp));
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

/** Build the app with a logger made from the shared variables, listen, and stop cleanly on signals. */
export async function serveApp(
  name: string,
  config: { HOST: string; PORT: number; LOG_LEVEL: string; LOG_FORMAT: "json" | "pretty" },
  build: (logger: Logger) => Promise<{ app: FastifyInstance; close(): Promise<void> }>,
): Promise<void> {
  const logger = createLogger({ name, level: config.LOG_LEVEL, format: config.LOG_FORMAT });
  const built = await build(logger);
  await startServer(built.app, { host: config.HOST, port: config.PORT, logger, onClose: built.close });
}
