import { ConfigError, type EnvSpec, type EnvValues, formatHelp, loadEnv } from "./config.js";

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
