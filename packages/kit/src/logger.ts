import { type DestinationStream, type LogFn, type Logger, pino } from "pino";
import pretty from "pino-pretty";
import { isDatabaseUnavailable } from "./db/outage.js";

export type { Logger } from "pino";

/** Credentials that must never reach a log line, wherever they appear in a logged object. */
export const REDACT_PATHS = [
  "req.headers.authorization",
  "req.headers.cookie",
  'req.headers["x-api-key"]',
  'req.headers["x-auth-token"]',
  'req.headers["x-signature"]',
  'res.headers["set-cookie"]',
  "headers.authorization",
  "headers.cookie",
  "token",
  "password",
  "secret",
  "pin",
  "ticket",
  "*.token",
  "*.password",
  "*.secret",
  "*.pin",
  "*.ticket",
  "*.authorization",
  "*.cookie",
];

export interface LoggerOptions {
  name: string;
  level?: string;
  format?: "json" | "pretty";
  /** Write here instead of stdout (tests capture log output through this). */
  stream?: DestinationStream;
}

/**
 * A background loop or a subscriber that fails because the database is away would log a stack on
 * every pass; the database layer logs the outage once (db/outage.ts), so those lines go to debug
 * with the driver's code only.
 */
function quietOutages(this: Logger, args: Parameters<LogFn>, method: LogFn, level: number): void {
  const first = args[0] as { err?: unknown } | undefined;
  if (
    level >= 40 &&
    first &&
    typeof first === "object" &&
    "err" in first &&
    isDatabaseUnavailable(first.err)
  ) {
    const { err, ...rest } = first;
    const cause = (err as { cause?: { code?: unknown } })?.cause ?? err;
    const code = (cause as { code?: unknown })?.code;
    if (this.isLevelEnabled("debug"))
      this.debug(
        { ...rest, db_unavailable: typeof code === "string" ? code : true },
        ...(args.slice(1) as [string]),
      );
    return;
  }
  method.apply(this, args);
}

export function createLogger(opts: LoggerOptions): Logger {
  const base = {
    name: opts.name,
    level: opts.level ?? "info",
    redact: { paths: REDACT_PATHS, censor: "[redacted]" },
    timestamp: pino.stdTimeFunctions.isoTime,
    hooks: { logMethod: quietOutages },
  };
  if (opts.stream) return pino(base, opts.stream);
  if (opts.format === "pretty") return pino(base, pretty({ colorize: process.stdout.isTTY, sync: true }));
  return pino(base);
}

/**
 * The keys that appear twice in one object of a JSON text (JSON.parse keeps the last one, so a
 * log pipeline that labels by such a key files the line under whichever value it sees).
 */
export function duplicateKeys(json: string): string[] {
  const dups: string[] = [];
  const stack: (Set<string> | null)[] = [];
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (c === "{") stack.push(new Set());
    else if (c === "[") stack.push(null);
    else if (c === "}" || c === "]") stack.pop();
    else if (c === '"') {
      let j = i + 1;
      while (j < json.length && json[j] !== '"') j += json[j] === "\\" ? 2 : 1;
      const str = json.slice(i + 1, j);
      let k = j + 1;
      while (json[k] === " " || json[k] === "\n" || json[k] === "\t" || json[k] === "\r") k++;
      const keys = stack.at(-1);
      if (json[k] === ":" && keys) {
        if (keys.has(str)) dups.push(str);
        keys.add(str);
      }
      i = j;
    }
  }
  return dups;
}

/**
 * A logger that writes into an array, for tests that search what was logged. A line with a
 * repeated key fails the test run (an uncaught error), whichever test wrote it.
 */
export function captureLogger(
  name = "test",
  level = "trace",
): { logger: Logger; lines: string[]; text(): string } {
  const lines: string[] = [];
  const stream: DestinationStream = {
    write: (s: string) => {
      lines.push(s);
      const dups = duplicateKeys(s);
      if (dups.length > 0)
        setImmediate(() => {
          throw new Error(`log line repeats the key(s) ${dups.join(", ")}: ${s.slice(0, 300)}`);
        });
    },
  };
  return { logger: createLogger({ name, level, stream }), lines, text: () => lines.join("") };
}
