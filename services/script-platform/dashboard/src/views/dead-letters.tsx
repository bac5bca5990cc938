import { useState } from "preact/hooks";
import { allScripts, api, type DeadLetter, qs } from "../api.js";
import {
  Empty,
  ErrorNote,
  formatTime,
  Loading,
  MoreButton,
  Section,
  useAction,
  usePaged,
  useResource,
} from "../ui.js";

function errorText(e: unknown): string {
  if (typeof e === "string") return e;
  const m = (e as { message?: unknown }).message;
  return typeof m === "string" ? m : JSON.stringify(e);
}

export function DeadLettersPage({ appId }: { appId: string }) {
  const [status, setStatus] = useState<"unresolved" | "resolved">("unresolved");
  const letters = usePaged<DeadLetter>(
    (cursor) => `apps/${appId}/dead-letters${qs({ status, cursor })}`,
    [appId, status],
  );
  const scripts = useResource(() => allScripts(appId), [appId]);
  const names = new Map(scripts.data?.map((s) => [s.id, s.name]));
  const act = useAction();
  const resolve = (dl: DeadLetter, how: "replay" | "ignore") =>
    act.run(async () => {
      await api.post(`apps/${appId}/dead-letters/${dl.id}/${how}`);
      letters.reload();
    });
  return (
    <Section
      title="Dead letters"
      actions={
        <div class="row">
          <button type="button" onClick={letters.reload} disabled={letters.loading}>
            Refresh
          </button>
          <select
            aria-label="Status"
            value={status}
            onChange={(e) => setStatus(e.currentTarget.value as "unresolved" | "resolved")}
          >
            <option value="unresolved">unresolved</option>
            <option value="resolved">resolved</option>
          </select>
        </div>
      }
    >
      <Loading resource={letters} />
      <ErrorNote error={act.error} />
      {letters.data && letters.data.length === 0 && <Empty>No {status} dead letters.</Empty>}
      <ul class="list">
        {letters.data?.map((dl) => (
          <li key={dl.id} class="stack-item">
            <div class="row">
              <span class="badge">{dl.source_kind ?? "event"}</span>
              <strong>{(dl.script_id && names.get(dl.script_id)) ?? dl.script_id}</strong>
              <span class="muted small">{formatTime(dl.created_at)}</span>
              {typeof dl.attempts === "number" && <span class="muted small">{dl.attempts} attempts</span>}
              {dl.resolution && <span class="badge">{dl.resolution}</span>}
            </div>
            {dl.error !== undefined && dl.error !== null && <p class="error small">{errorText(dl.error)}</p>}
            {dl.event !== undefined && dl.event !== null && (
              <details>
                <summary>Event</summary>
                <pre>{JSON.stringify(dl.event, null, 2)}</pre>
              </details>
            )}
            {!dl.resolution && (
              <div class="row">
                <button type="button" disabled={act.busy} onClick={() => resolve(dl, "replay")}>
                  Replay
                </button>
                <button type="button" disabled={act.busy} onClick={() => resolve(dl, "ignore")}>
                  Ignore
                </button>
              </div>
            )}
          </li>
        ))}
      </ul>
      <MoreButton paged={letters} />
    </Section>
  );
}
