import { useEffect, useState } from "preact/hooks";
import { allScripts, type Execution, type LogLine, qs } from "../api.js";
import { t, tn } from "../i18n.js";
import { Empty, Field, formatTime, Loading, MoreButton, Section, usePaged, useResource } from "../ui.js";

const INVOCATION_TYPES = ["http", "kv", "docs", "files", "pubsub", "cron", "email", "dead_letter"];
/** Newest live rows kept on the page. */
const LIVE_MAX = 200;

interface StructuredError {
  code?: string;
  message?: string;
  stack?: string | null;
  line?: number | null;
  column?: number | null;
}

/** Follow GET …/executions/stream (SSE; the session cookie authenticates EventSource). */
function useLiveTail(appId: string, filters: Record<string, string>, on: boolean) {
  const [live, setLive] = useState<Execution[]>([]);
  const [state, setState] = useState<"off" | "connecting" | "live" | "retrying">("off");
  const key = JSON.stringify(filters);
  useEffect(() => {
    setLive([]);
    if (!on) {
      setState("off");
      return;
    }
    setState("connecting");
    const es = new EventSource(`/api/v1/admin/apps/${appId}/executions/stream${qs(filters)}`);
    es.onopen = () => setState("live");
    es.onerror = () => setState("retrying");
    es.addEventListener("execution", (e) => {
      const x = JSON.parse((e as MessageEvent<string>).data) as Execution;
      setLive((rows) => [x, ...rows.filter((r) => r.id !== x.id)].slice(0, LIVE_MAX));
    });
    return () => es.close();
  }, [appId, key, on]);
  return { live, state };
}

function logText(l: LogLine): string {
  if (typeof l.message === "string") return l.message;
  if (typeof l.msg === "string") return l.msg;
  if (Array.isArray(l.args))
    return l.args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ");
  return JSON.stringify(l);
}

function errorText(e: unknown): string | null {
  if (e === null || e === undefined) return null;
  if (typeof e === "string") return e;
  const s = e as StructuredError;
  const where =
    typeof s.line === "number" ? ` at line ${s.line}${s.column ? `, column ${s.column}` : ""}` : "";
  if (typeof s.message === "string")
    return `${s.code ? `${s.code}${where}: ` : where ? `${where.trim()}: ` : ""}${s.message}`;
  return JSON.stringify(e);
}

export function ExecutionsPage({ appId }: { appId: string }) {
  const [status, setStatus] = useState("");
  const [scriptId, setScriptId] = useState("");
  const [type, setType] = useState("");
  const [since, setSince] = useState("");
  const [follow, setFollow] = useState(false);
  const sinceIso = since ? new Date(since).toISOString() : "";
  const filters: Record<string, string> = { status, script_id: scriptId, invocation_type: type };
  const executions = usePaged<Execution>(
    (cursor) => `apps/${appId}/executions${qs({ ...filters, since: sinceIso, cursor })}`,
    [appId, status, scriptId, type, sinceIso],
  );
  const tail = useLiveTail(
    appId,
    Object.fromEntries(Object.entries(filters).filter(([, v]) => v !== "")),
    follow,
  );
  // Names for the rows; a failure here only costs the names, so it is not shown as an error.
  const scripts = useResource(() => allScripts(appId), [appId]);
  const names = new Map(scripts.data?.map((s) => [s.id, s.name]));
  const shown = new Set(tail.live.map((x) => x.id));
  return (
    <Section
      title={t("executions")}
      actions={
        <div class="row">
          <button type="button" onClick={executions.reload} disabled={executions.loading}>
            {t("refresh")}
          </button>
          <label class="check">
            <input
              type="checkbox"
              name="follow"
              checked={follow}
              onChange={(e) => setFollow(e.currentTarget.checked)}
            />{" "}
            {t("live_tail")}
          </label>
          {follow && (
            <span class="muted small" data-testid="tail-state">
              {tail.state === "live"
                ? t("following")
                : tail.state === "retrying"
                  ? t("reconnecting")
                  : t("connecting")}
            </span>
          )}
        </div>
      }
    >
      <div class="grid filters">
        <Field label={t("status")}>
          <select
            name="status"
            aria-label={t("status")}
            value={status}
            onChange={(e) => setStatus(e.currentTarget.value)}
          >
            <option value="">{t("all")}</option>
            <option value="ok">ok</option>
            <option value="error">error</option>
            <option value="timeout">timeout</option>
            <option value="limit">limit</option>
          </select>
        </Field>
        <Field label={t("script")}>
          <select name="script_id" value={scriptId} onChange={(e) => setScriptId(e.currentTarget.value)}>
            <option value="">{t("all")}</option>
            {scripts.data?.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        </Field>
        <Field label={t("started_by")}>
          <select name="invocation_type" value={type} onChange={(e) => setType(e.currentTarget.value)}>
            <option value="">{t("all")}</option>
            {INVOCATION_TYPES.map((t) => (
              <option key={t}>{t}</option>
            ))}
          </select>
        </Field>
        <Field label={t("since")}>
          <input
            name="since"
            type="datetime-local"
            value={since}
            onInput={(e) => setSince(e.currentTarget.value)}
          />
        </Field>
      </div>
      {tail.live.length > 0 && (
        <ul class="list executions live" data-testid="live-executions" aria-live="polite">
          {tail.live.map((x) => (
            <ExecutionRow key={x.id} execution={x} scriptName={names.get(x.script_id ?? "")} />
          ))}
        </ul>
      )}
      <Loading resource={executions} />
      {executions.data && executions.data.length === 0 && tail.live.length === 0 && (
        <Empty>{t("no_executions")}</Empty>
      )}
      <ul class="list executions" data-testid="executions">
        {executions.data
          ?.filter((x) => !shown.has(x.id))
          .map((x) => (
            <ExecutionRow
              key={x.id}
              execution={x}
              scriptName={x.script_id ? names.get(x.script_id) : undefined}
            />
          ))}
      </ul>
      <MoreButton paged={executions} />
    </Section>
  );
}

function ExecutionRow({
  execution: x,
  scriptName,
}: {
  execution: Execution;
  scriptName: string | undefined;
}) {
  const [open, setOpen] = useState(false);
  const err = errorText(x.error);
  const logs = x.logs ?? [];
  return (
    <li class="execution">
      <button type="button" class="plain row-toggle" aria-expanded={open} onClick={() => setOpen(!open)}>
        <span class={`badge status-${x.status}`}>{x.status}</span>
        <strong>{scriptName ?? x.script_name ?? x.script_id ?? "script"}</strong>
        {x.invocation_type && <span class="muted small">{x.invocation_type}</span>}
        <span class="muted small">{typeof x.duration_ms === "number" ? `${x.duration_ms} ms` : ""}</span>
        <span class="muted small">{formatTime(x.started_at ?? x.created_at)}</span>
        <span class="muted small">{tn("log_lines", logs.length)}</span>
        {/* The failure in one line while collapsed; expanding shows all of it with the stack. */}
        {err && !open && <span class="error-line small">{err}</span>}
      </button>
      {open && (
        <div class="details">
          <p class="muted small">{t("execution_id", { id: x.id })}</p>
          {err && (
            <p class="error" data-testid="execution-error">
              {err}
            </p>
          )}
          {typeof (x.error as StructuredError | null)?.stack === "string" && (
            <pre class="stack" data-testid="execution-stack" aria-label={t("stack")}>
              {(x.error as StructuredError).stack}
            </pre>
          )}
          {logs.length === 0 ? (
            <p class="muted">{t("no_logs")}</p>
          ) : (
            <ol class="logs">
              {logs.map((l, i) => (
                <li key={i} class={`log-${l.level ?? "info"}`}>
                  <span class="level">{l.level ?? "info"}</span> {logText(l)}
                </li>
              ))}
            </ol>
          )}
        </div>
      )}
    </li>
  );
}
