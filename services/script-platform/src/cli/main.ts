import { readFileSync } from "node:fs";
import { type ParseArgsConfig, parseArgs } from "node:util";
import { login, pull, push } from "./commands.js";
import { CliError, EXIT } from "./errors.js";
import type { Io } from "./io.js";
import { run, STATUSES, tail } from "./run-tail.js";

const VERSION: string = (
  JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
).version;

type Options = NonNullable<ParseArgsConfig["options"]>;

interface Command {
  usage: string;
  about: string;
  options: Options;
  positionals: [min: number, max: number];
  run(
    io: Io,
    args: string[],
    values: Record<string, string | boolean | string[] | undefined>,
  ): Promise<number>;
}

const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

const COMMANDS: Record<string, Command> = {
  login: {
    usage: "login --url URL [--username NAME]",
    about:
      "Log in with a username and password (prompted; the password is not echoed), or check PLATFORM_TOKEN\n" +
      "(a session token or an API key) when it is set. Saves the URL and token to the config file (mode 0600).",
    options: { url: { type: "string" }, username: { type: "string", short: "u" } },
    positionals: [0, 0],
    run: (io, _a, v) => login(io, { url: str(v.url), username: str(v.username) }),
  },
  pull: {
    usage: "pull APP [DIR]",
    about:
      "Write the app's scripts to DIR (default ./APP): <name>.js or <name>.ts per endpoint, modules under\n" +
      "modules/, and platform.json with kinds, languages, timeouts, sandbox settings, routes and triggers.",
    options: {},
    positionals: [1, 2],
    run: (io, [app, dir]) => pull(io, app as string, dir),
  },
  push: {
    usage: "push APP [DIR] [--dry-run]",
    about:
      "Make the platform hold what DIR holds (default: . when it has a platform.json, else ./APP): a new\n" +
      "version of each script whose source or settings changed, new scripts created, routes and triggers\n" +
      "made equal to platform.json. Prints the diff first; --dry-run stops there. Scripts that are only on\n" +
      "the platform are left alone.",
    options: { "dry-run": { type: "boolean", short: "n" } },
    positionals: [1, 2],
    run: (io, [app, dir], v) => push(io, app as string, dir, v["dry-run"] === true),
  },
  run: {
    usage:
      "run SCRIPT [--path P] [--method M] [--body JSON] [--header 'Name: value']... [--file FILE] [--app APP]",
    about:
      "Run a saved endpoint script with one request (a draft run: no route needed, no triggers fired) and\n" +
      "print the response body on stdout, status, logs and error on stderr. SCRIPT is APP/NAME, a script\n" +
      "id, or NAME with --app or inside a pulled folder. --file runs that file's source instead of the saved\n" +
      "version. Exit 1 when the run ended in an error.",
    options: {
      path: { type: "string", short: "p" },
      method: { type: "string", short: "X" },
      body: { type: "string", short: "d" },
      header: { type: "string", short: "H", multiple: true },
      file: { type: "string", short: "f" },
      app: { type: "string" },
    },
    positionals: [1, 1],
    run: (io, [ref], v) =>
      run(io, ref as string, {
        app: str(v.app),
        path: str(v.path),
        method: str(v.method),
        body: str(v.body),
        header: Array.isArray(v.header) ? v.header : undefined,
        file: str(v.file),
      }),
  },
  tail: {
    usage: `tail APP [--status ${STATUSES.join("|")}] [--script NAME] [--json]`,
    about:
      "Follow the app's executions as they finish (every process's runs): status, script, trigger kind,\n" +
      "duration, logs, and the error with its line and stack. --json prints one record per line. Ctrl+C stops.",
    options: {
      status: { type: "string", short: "s" },
      script: { type: "string" },
      json: { type: "boolean" },
    },
    positionals: [1, 1],
    run: (io, [app], v) =>
      tail(io, app as string, { status: str(v.status), script: str(v.script), json: v.json === true }),
  },
};

const HELP = `platform ${VERSION}: the script-platform command-line client

Usage: platform <command> [options]

Commands:
${Object.values(COMMANDS)
  .map((c) => `  ${c.usage}`)
  .join("\n")}

Options: --help (also after a command), --version

Credentials: PLATFORM_URL and PLATFORM_TOKEN, else what \`platform login\` saved in
$XDG_CONFIG_HOME/platform/config.json (default ~/.config/platform/config.json).
Exit codes: 0 done, 1 failed (the platform refused, the run ended in an error, network),
2 usage error, 3 not logged in or not allowed.
`;

/** The whole CLI: returns the exit code; prints through `io` only. */
export async function main(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === "--help" || name === "-h" || name === "help") {
    const topic = name === "help" ? rest[0] : undefined;
    const cmd = topic ? COMMANDS[topic] : undefined;
    if (name === undefined) io.err(HELP);
    else io.out(cmd ? commandHelp(cmd) : HELP);
    return name === undefined ? EXIT.usage : EXIT.ok;
  }
  if (name === "--version" || name === "-v") {
    io.out(`${VERSION}\n`);
    return EXIT.ok;
  }
  const cmd = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (!cmd) {
    io.err(
      `platform: unknown command ${name}. Commands: ${Object.keys(COMMANDS).join(", ")} (platform --help).\n`,
    );
    return EXIT.usage;
  }
  try {
    const { values, positionals } = parseArgs({
      args: rest,
      options: { ...cmd.options, help: { type: "boolean", short: "h" } },
      allowPositionals: true,
      strict: true,
    });
    if (values.help) {
      io.out(commandHelp(cmd));
      return EXIT.ok;
    }
    const [min, max] = cmd.positionals;
    if (positionals.length < min || positionals.length > max)
      throw new CliError(`usage: platform ${cmd.usage}`, EXIT.usage);
    return await cmd.run(io, positionals, values);
  } catch (err) {
    if (err instanceof CliError) {
      io.err(`platform ${name}: ${err.message}\n`);
      return err.code;
    }
    const e = err as { code?: string; message?: string };
    if (typeof e.code === "string" && e.code.startsWith("ERR_PARSE_ARGS")) {
      io.err(`platform ${name}: ${e.message}\nusage: platform ${cmd.usage}\n`);
      return EXIT.usage;
    }
    io.err(`platform ${name}: ${e.message ?? String(err)}\n`);
    return EXIT.failed;
  }
}

function commandHelp(cmd: Command): string {
  return `Usage: platform ${cmd.usage}\n\n${cmd.about}\n`;
}
