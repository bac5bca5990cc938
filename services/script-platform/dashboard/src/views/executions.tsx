import { useState } from "preact/hooks";
import { allScripts, type Execution, type LogLine, qs } from "../api.js";
import { Empty, formatTime, Loading, MoreButton, Section, usePaged, useResource } from "../ui.js";

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
  const m = (e as { message?: unknown }).message;
  return typeof m === "string" ? m : JSON.stringify(e);
}

export function ExecutionsPage({ appId }: { appId: string }) {
  const [status, setStatus] = useState("");
  const executions = usePaged<Execution>(
    (cursor) => `apps/${appId}/executions${qs({ status, cursor })}`,
    [appId, status],
  );
  // Names for the rows; a failure here only costs the names, so it is not shown as an error.
  const scripts = useResource(() => allScripts(appId), [appId]);
  const names = new Map(scripts.data?.map((s) => [s.id, s.name]));
  return (
    <Section
      title="Executions"
      actions={
        <div class="row">
          <button type="button" onClick={executions.reload} disabled={executions.loading}>
            Refresh
          </button>
          <select aria-label="Status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
            <option value="">all</option>
            <option value="succeeded">succeeded</option>
            <option value="failed">failed</option>
          </select>
        </div>
      }
    >
      <Loading resource={executions} />
      {executions.data && executions.data.length === 0 && <Empty>No executions yet.</Empty>}
      <ul class="list executions" data-testid="executions">
        {executions.data?.map((x) => (
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
        <span class="muted small">
          {logs.length} log line{logs.length === 1 ? "" : "s"}
        </span>
      </button>
      {open && (
        <div class="details">
          <p class="muted small">execution {x.id}</p>
          {err && <p class="error">{err}</p>}
          {logs.length === 0 ? (
            <p class="muted">No logs.</p>
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
