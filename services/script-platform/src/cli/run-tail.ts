import { readFile } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import { createApiClient, errorOf, type ScriptView } from "./client.js";
import { findScript } from "./commands.js";
import { credentials } from "./config.js";
import { CliError, EXIT } from "./errors.js";
import type { Io } from "./io.js";
import { bodyText, color, errorLines, type LogLine, logLines, type RunError } from "./print.js";
import { readSse } from "./sse.js";

export interface RunOptions {
  app?: string | undefined;
  path?: string | undefined;
  method?: string | undefined;
  body?: string | undefined;
  header?: string[] | undefined;
  file?: string | undefined;
}

interface RunResult {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  logs: LogLine[];
  duration_ms: number;
  error: RunError | null;
}

/**
 * `run SCRIPT [--path P] [--method M] [--body JSON]`: runs the saved script (or `--file`'s source
 * as a draft) with one request. The response body goes to stdout, status, logs and error to stderr.
 */
export async function run(io: Io, ref: string, opts: RunOptions): Promise<number> {
  let body: unknown;
  if (opts.body !== undefined) {
    try {
      body = JSON.parse(opts.body);
    } catch {
      throw new CliError(`--body must be JSON (a string needs quotes: '"text"'): ${opts.body}`, EXIT.usage);
    }
  }
  const headers: Record<string, string> = {};
  for (const h of opts.header ?? []) {
    const i = h.indexOf(":");
    if (i < 1) throw new CliError(`--header must be "Name: value", not ${h}`, EXIT.usage);
    headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
  }
  const target = new URL(opts.path ?? "/", "http://x");
  if (!(opts.path ?? "/").startsWith("/")) throw new CliError("--path must start with /", EXIT.usage);
  const query = Object.fromEntries(target.searchParams);
  const c = await credentials(io.env);
  const api = createApiClient({ baseUrl: c.url, token: c.token, fetch: io.fetch });
  const script = await findScript(io, api, ref, opts.app);
  const draft: Record<string, unknown> = {};
  if (opts.file) {
    const path = isAbsolute(opts.file) ? opts.file : join(io.cwd, opts.file);
    draft.source = await readFile(path, "utf8").catch(() => {
      throw new CliError(`Cannot read ${opts.file}`, EXIT.usage);
    });
    draft.language = path.endsWith(".ts") ? "typescript" : "javascript";
  }
  const result = await api.request<RunResult>("POST", `/api/v1/admin/scripts/${script.id}:run`, {
    ...draft,
    request: {
      method: (opts.method ?? "GET").toUpperCase(),
      path: target.pathname,
      ...(Object.keys(query).length ? { query } : {}),
      ...(Object.keys(headers).length ? { headers } : {}),
      ...(body !== undefined ? { body } : {}),
    },
  });
  const status =
    result.status >= 400
      ? color(io, "red", String(result.status))
      : color(io, "green", String(result.status));
  io.err(
    `${status} ${script.name}${opts.file ? " (draft)" : ` v${script.version ?? "?"}`} in ${Math.round(result.duration_ms)} ms\n`,
  );
  io.err(logLines(io, result.logs));
  io.err(errorLines(io, result.error));
  io.out(bodyText(result.body));
  return result.error ? EXIT.failed : EXIT.ok;
}

export const STATUSES = ["ok", "error", "timeout", "limit"] as const;

export interface TailOptions {
  status?: string | undefined;
  script?: string | undefined;
  json?: boolean | undefined;
}

interface ExecutionRecord {
  id: string;
  script_id: string | null;
  invocation_type?: string;
  status: string;
  duration_ms?: number | null;
  logs?: LogLine[];
  error?: RunError | null;
  created_at?: string;
  finished_at?: string | null;
}

/** How long `tail` waits before reconnecting a dropped stream (it resumes with Last-Event-ID). */
const RECONNECT_MS = 1000;

/** `tail APP [--status S] [--script NAME]`: the live executions log until Ctrl+C. */
export async function tail(io: Io, app: string, opts: TailOptions): Promise<number> {
  if (opts.status && !(STATUSES as readonly string[]).includes(opts.status))
    throw new CliError(`--status must be one of ${STATUSES.join(", ")}`, EXIT.usage);
  const c = await credentials(io.env);
  const api = createApiClient({ baseUrl: c.url, token: c.token, fetch: io.fetch });
  const a = await api.app(app);
  const names = new Map<string, string>();
  const refreshNames = async () => {
    for (const s of await api.scripts(a.id)) names.set(s.id, s.name);
  };
  await refreshNames();
  const q = new URLSearchParams();
  if (opts.status) q.set("status", opts.status);
  if (opts.script) {
    const s = [...names].find(([, n]) => n === opts.script);
    if (!s) throw new CliError(`App ${a.slug} has no script ${opts.script}.`);
    q.set("script_id", s[0]);
  }
  const url = api.url(`/api/v1/admin/apps/${a.id}/executions/stream${q.size ? `?${q}` : ""}`);
  io.err(
    `Tailing ${a.slug}${opts.status ? ` (status ${opts.status})` : ""}${opts.script ? ` (script ${opts.script})` : ""}; Ctrl+C to stop.\n`,
  );
  let lastId: string | null = null;
  while (!io.signal.aborted) {
    let res: Response;
    try {
      res = await io.fetch(url, {
        headers: api.headers({ accept: "text/event-stream", ...(lastId ? { "last-event-id": lastId } : {}) }),
        signal: io.signal,
      });
    } catch (err) {
      if (io.signal.aborted) break;
      io.err(color(io, "dim", `connection lost (${(err as Error).message}); retrying\n`));
      await pause(RECONNECT_MS, io.signal);
      continue;
    }
    if (!res.ok || !res.body) throw errorOf(res.status, await res.text(), c.url);
    try {
      for await (const ev of readSse(res.body)) {
        if (ev.event !== "execution") continue;
        if (ev.id) lastId = ev.id;
        const r = JSON.parse(ev.data) as ExecutionRecord;
        if (opts.json) {
          io.out(`${JSON.stringify(r)}\n`);
          continue;
        }
        if (r.script_id && !names.has(r.script_id)) await refreshNames().catch(() => {});
        io.out(formatRecord(io, r, names));
      }
    } catch (err) {
      if (io.signal.aborted) break;
      io.err(color(io, "dim", `stream ended (${(err as Error).message}); reconnecting\n`));
    }
    if (!io.signal.aborted) await pause(RECONNECT_MS, io.signal);
  }
  return EXIT.ok;
}

const STATUS_COLOR = { ok: "green", error: "red", timeout: "yellow", limit: "yellow" } as const;

export function formatRecord(io: Io, r: ExecutionRecord, names: Map<string, string>): string {
  const at = (r.finished_at ?? r.created_at ?? "").slice(11, 23);
  const name = (r.script_id && names.get(r.script_id)) || r.script_id || "?";
  const st = color(io, STATUS_COLOR[r.status as keyof typeof STATUS_COLOR] ?? "red", r.status.padEnd(7));
  const ms = r.duration_ms === null || r.duration_ms === undefined ? "" : ` ${Math.round(r.duration_ms)} ms`;
  return `${color(io, "dim", at)} ${st} ${name} ${color(io, "dim", `(${r.invocation_type ?? "?"})`)}${ms}\n${logLines(io, r.logs)}${errorLines(io, r.error)}`;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(t);
        resolve();
      },
      { once: true },
    );
  });
}

export type { ScriptView };
