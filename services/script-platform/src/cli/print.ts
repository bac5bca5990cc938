import type { Io } from "./io.js";

const CODES = { red: 31, green: 32, yellow: 33, cyan: 36, dim: 2 } as const;

export function color(io: Io, c: keyof typeof CODES, text: string): string {
  return io.color ? `\u001b[${CODES[c]}m${text}\u001b[0m` : text;
}

/** A plan or diff line coloured by its first character (only on a terminal). */
export function paint(io: Io, line: string): string {
  if (line.startsWith("+++") || line.startsWith("---")) return color(io, "dim", line);
  if (line.startsWith("+")) return color(io, "green", line);
  if (line.startsWith("-")) return color(io, "red", line);
  if (line.startsWith("@@")) return color(io, "cyan", line);
  if (line.startsWith("~")) return color(io, "yellow", line);
  return line;
}

export interface RunError {
  code: string;
  message: string;
  stack?: string | null;
  line?: number | null;
  column?: number | null;
}
export interface LogLine {
  level?: string;
  message?: string;
  at?: string;
}

/** Log lines of a run, indented under it. */
export function logLines(io: Io, logs: LogLine[] | undefined): string {
  return (logs ?? [])
    .map((l) => {
      const level = (l.level ?? "info").padEnd(5);
      const painted =
        l.level === "error"
          ? color(io, "red", level)
          : l.level === "warn"
            ? color(io, "yellow", level)
            : color(io, "dim", level);
      return `    ${painted} ${l.message ?? ""}\n`;
    })
    .join("");
}

/** A run's error: code, message, script line and column, then the stack indented. */
export function errorLines(io: Io, e: RunError | null | undefined): string {
  if (!e) return "";
  const at = e.line ? ` (line ${e.line}${e.column ? `:${e.column}` : ""})` : "";
  let out = `    ${color(io, "red", `${e.code}: ${e.message}`)}${at}\n`;
  if (e.stack)
    out += e.stack
      .split("\n")
      .filter((l) => l.trim())
      .map((l) => `      ${color(io, "dim", l.trim())}\n`)
      .join("");
  return out;
}

/** A response body for the terminal: strings as they are, anything else as indented JSON. */
export function bodyText(body: unknown): string {
  if (body === undefined || body === null) return "";
  if (typeof body === "string") return body.endsWith("\n") ? body : `${body}\n`;
  return `${JSON.stringify(body, null, 2)}\n`;
}
