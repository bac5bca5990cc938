import { createInterface } from "node:readline";
import type { Fetch } from "./client.js";

/** Everything a command touches outside its arguments, so tests run commands in-process. */
export interface Io {
  env: NodeJS.ProcessEnv;
  cwd: string;
  out(text: string): void;
  err(text: string): void;
  /** One answer; `hidden` does not echo it (a password). */
  prompt(question: string, hidden: boolean): Promise<string>;
  fetch: Fetch;
  /** ANSI colours in diffs and tails. */
  color: boolean;
  /** Aborted on Ctrl+C: `tail` ends cleanly. */
  signal: AbortSignal;
  /** Releases stdin so the process can end. */
  close(): void;
}

/** The real process: stdout/stderr, prompts on the terminal (or lines of piped stdin). */
export function processIo(): Io {
  const abort = new AbortController();
  process.once("SIGINT", () => abort.abort());
  let reader: ReturnType<typeof createInterface> | null = null;
  let piped: AsyncIterator<string> | null = null;
  return {
    env: process.env,
    cwd: process.cwd(),
    out: (t) => process.stdout.write(t),
    err: (t) => process.stderr.write(t),
    fetch,
    color: Boolean(process.stdout.isTTY) && !process.env.NO_COLOR,
    signal: abort.signal,
    close: () => reader?.close(),
    async prompt(question, hidden) {
      if (!process.stdin.isTTY) {
        // Piped answers, one per line (scripts and tests).
        reader ??= createInterface({ input: process.stdin, terminal: false });
        piped ??= reader[Symbol.asyncIterator]();
        const next = await piped.next();
        return next.done ? "" : next.value;
      }
      return hidden ? readHidden(question) : readLine(question);
    },
  };
}

function readLine(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  return new Promise((resolve) =>
    rl.question(question, (a) => {
      rl.close();
      resolve(a);
    }),
  );
}

/** A password from the terminal without echo (raw mode; Backspace and Ctrl+C handled). */
function readHidden(question: string): Promise<string> {
  process.stderr.write(question);
  const stdin = process.stdin;
  stdin.setRawMode(true);
  stdin.resume();
  stdin.setEncoding("utf8");
  return new Promise((resolve, reject) => {
    let value = "";
    const done = (err?: Error) => {
      stdin.setRawMode(false);
      stdin.pause();
      stdin.off("data", onData);
      process.stderr.write("\n");
      if (err) reject(err);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === "\r" || ch === "\n") return done();
        if (ch === "\u0003") return done(new Error("cancelled"));
        if (ch === "\u007f" || ch === "\b") value = value.slice(0, -1);
        else value += ch;
      }
    };
    stdin.on("data", onData);
  });
}
