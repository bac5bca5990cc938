import { diffLines } from "diff";
import { useState } from "preact/hooks";
import { api, type Page, type Script } from "../api.js";
import type { EditorHandle, SourceProblem } from "../editor.js";
import { t } from "../i18n.js";
import {
  ConfirmButton,
  Empty,
  ErrorNote,
  Field,
  formatTime,
  parseJsonField,
  Section,
  useAction,
  useResource,
} from "../ui.js";

export interface VersionSummary {
  version: number;
  created_at: string;
  created_by: string | null;
  language: "javascript" | "typescript";
  size: number;
  sha256: string;
}
export interface VersionDetail extends VersionSummary {
  source: string;
}
export interface RunError {
  code: string;
  message: string;
  stack: string | null;
  line: number | null;
  column: number | null;
}
export interface RunResult {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  logs: { level: string; message: string; at: string }[];
  duration_ms: number;
  error: RunError | null;
}

/** Where a run error points in the source, as an editor problem (null without a line). */
export function runProblem(e: RunError | null): SourceProblem | null {
  if (!e || typeof e.line !== "number") return null;
  return { line: e.line, column: e.column ?? undefined, message: `${e.code}: ${e.message}` };
}

/** A line diff of `from` → `to`, as rows marked +, - or blank. */
export function DiffView({ from, to }: { from: string; to: string }) {
  const parts = diffLines(from, to);
  if (parts.every((p) => !p.added && !p.removed)) return <p class="muted">No differences.</p>;
  return (
    <pre class="diff" data-testid="version-diff">
      {parts.flatMap((p, i) =>
        p.value
          .replace(/\n$/, "")
          .split("\n")
          .map((line, j) => (
            <span key={`${i}-${j}`} class={p.added ? "add" : p.removed ? "del" : undefined}>
              {p.added ? "+ " : p.removed ? "- " : "  "}
              {line}
              {"\n"}
            </span>
          )),
      )}
    </pre>
  );
}

/**
 * Every saved version of a script: view one, diff it against the current source, restore it
 * (a restore saves a new version; routes and triggers keep pointing at the script).
 */
export function VersionsPanel({ script, onRestored }: { script: Script; onRestored: (s: Script) => void }) {
  const versions = useResource(
    () => api.get<Page<VersionSummary>>(`scripts/${script.id}/versions?limit=100`),
    [script.id, script.version],
  );
  const [open, setOpen] = useState<VersionDetail | null>(null);
  const view = useAction();
  const restore = useAction();
  return (
    <Section title={t("versions")}>
      <ErrorNote error={versions.error} />
      {versions.data && versions.data.items.length === 0 && <Empty>{t("no_versions")}</Empty>}
      <ul class="list versions" data-testid="versions">
        {versions.data?.items.map((v) => (
          <li key={v.version} class="row">
            <strong>v{v.version}</strong>
            {v.version === script.version && <span class="badge">{t("current")}</span>}
            <span class="muted">
              {formatTime(v.created_at)} · {v.created_by ?? "—"} · {v.language} · {v.size} B
            </span>
            <span class="spacer" />
            <button
              type="button"
              onClick={() =>
                view.run(async () =>
                  setOpen(await api.get<VersionDetail>(`scripts/${script.id}/versions/${v.version}`)),
                )
              }
            >
              {t("view_version", { n: v.version })}
            </button>
          </li>
        ))}
      </ul>
      <ErrorNote error={view.error} />
      {open && (
        <div class="stack" data-testid="version-detail">
          <h3>{t("version_compared", { n: open.version, current: script.version ?? "?" })}</h3>
          <DiffView from={script.source} to={open.source} />
          <div class="row">
            {open.version !== script.version && (
              <ConfirmButton
                label={t("restore_version", { n: open.version })}
                confirm={t("restore_confirm", { n: open.version })}
                disabled={restore.busy}
                onConfirm={() =>
                  restore.run(async () => {
                    const s = await api.post<Script>(`scripts/${script.id}/versions/${open.version}:restore`);
                    setOpen(null);
                    onRestored(s);
                  })
                }
              />
            )}
            <button type="button" onClick={() => setOpen(null)}>
              {t("close")}
            </button>
          </div>
          <ErrorNote error={restore.error} />
        </div>
      )}
    </Section>
  );
}

function pairs(text: string, label: string): Record<string, string> | undefined {
  const v = parseJsonField(label, text);
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "object" || Array.isArray(v) || Object.values(v).some((x) => typeof x !== "string"))
    throw new Error(t("json_object_of_strings", { label }));
  return v as Record<string, string>;
}

/**
 * Run the editor's current text (saved or not) with the production sandbox, limits and SDK.
 * Triggers fire only when the author ticks the box.
 */
export function RunPanel({
  script,
  editor,
  language,
}: {
  script: Script;
  editor: { current: EditorHandle | null };
  language: "javascript" | "typescript";
}) {
  const [method, setMethod] = useState("GET");
  const [path, setPath] = useState("/");
  const [query, setQuery] = useState("");
  const [headers, setHeaders] = useState("");
  const [body, setBody] = useState("");
  const [fire, setFire] = useState(false);
  const [result, setResult] = useState<RunResult | null>(null);
  const run = useAction();
  const onRun = (e: Event) => {
    e.preventDefault();
    run.run(async () => {
      setResult(null);
      const request: Record<string, unknown> = { method, path };
      const q = new URLSearchParams(query.replace(/^\?/, ""));
      if ([...q.keys()].length > 0) request.query = Object.fromEntries(q);
      const h = pairs(headers, t("headers"));
      if (h) request.headers = h;
      if (body.trim() !== "") {
        try {
          request.body = JSON.parse(body);
        } catch {
          request.body = body;
        }
      }
      try {
        const r = await api.post<RunResult>(`scripts/${script.id}:run`, {
          source: editor.current?.value() ?? script.source,
          language,
          request,
          fire_triggers: fire,
        });
        setResult(r);
        const p = runProblem(r.error);
        editor.current?.showProblems(p ? [p] : []);
      } catch (err) {
        editor.current?.showProblems([]);
        throw err;
      }
    });
  };
  return (
    <Section title={t("run")}>
      <form class="stack" onSubmit={onRun} data-testid="run-panel">
        <div class="grid">
          <Field label={t("method")}>
            <select name="run_method" value={method} onChange={(e) => setMethod(e.currentTarget.value)}>
              {["GET", "POST", "PUT", "PATCH", "DELETE"].map((m) => (
                <option key={m}>{m}</option>
              ))}
            </select>
          </Field>
          <Field label={t("path")}>
            <input name="run_path" value={path} onInput={(e) => setPath(e.currentTarget.value)} />
          </Field>
          <Field label={t("query")} hint="name=ann&x=1">
            <input name="run_query" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
          </Field>
        </div>
        <Field label={t("headers_json")}>
          <textarea
            name="run_headers"
            rows={2}
            spellcheck={false}
            placeholder='{"x-demo": "1"}'
            value={headers}
            onInput={(e) => setHeaders(e.currentTarget.value)}
          />
        </Field>
        <Field label={t("body")} hint={t("body_hint")}>
          <textarea
            name="run_body"
            rows={3}
            spellcheck={false}
            value={body}
            onInput={(e) => setBody(e.currentTarget.value)}
          />
        </Field>
        <label class="check">
          <input type="checkbox" checked={fire} onChange={(e) => setFire(e.currentTarget.checked)} />{" "}
          {t("fire_triggers")}
        </label>
        <button type="submit" class="primary" disabled={run.busy}>
          {run.busy ? t("running") : t("run_draft")}
        </button>
        <ErrorNote error={run.error} />
      </form>
      {result && (
        <div class="stack run-result" data-testid="run-result">
          <p>
            <strong class={result.status < 400 ? "ok" : "bad"}>{t("status_n", { n: result.status })}</strong>{" "}
            <span class="muted">· {result.duration_ms} ms</span>
          </p>
          {result.error && (
            <div class="error" role="alert" data-testid="run-error">
              <strong>{result.error.code}</strong>
              {typeof result.error.line === "number" &&
                `${t("at_line", { line: result.error.line })}${result.error.column ? t("column_n", { n: result.error.column }) : ""}`}
              : {result.error.message}
              {result.error.stack && <pre>{result.error.stack}</pre>}
            </div>
          )}
          <details>
            <summary>{t("headers")}</summary>
            <pre>{JSON.stringify(result.headers, null, 2)}</pre>
          </details>
          <h3>{t("body")}</h3>
          <pre data-testid="run-body">
            {typeof result.body === "string" ? result.body : JSON.stringify(result.body, null, 2)}
          </pre>
          <h3>{t("logs")}</h3>
          {result.logs.length === 0 ? (
            <p class="muted">{t("no_logs")}</p>
          ) : (
            <pre data-testid="run-logs">
              {result.logs.map((l) => `${l.level.padEnd(5)} ${l.message}`).join("\n")}
            </pre>
          )}
        </div>
      )}
    </Section>
  );
}
