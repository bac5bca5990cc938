import { useState } from "preact/hooks";
import { allScripts, api, type DeadLetter, qs } from "../api.js";
import { t } from "../i18n.js";
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
      title={t("dead_letters")}
      actions={
        <div class="row">
          <button type="button" onClick={letters.reload} disabled={letters.loading}>
            {t("refresh")}
          </button>
          <select
            aria-label={t("status")}
            value={status}
            onChange={(e) => setStatus(e.currentTarget.value as "unresolved" | "resolved")}
          >
            <option value="unresolved">{t("unresolved")}</option>
            <option value="resolved">{t("resolved")}</option>
          </select>
        </div>
      }
    >
      <Loading resource={letters} />
      <ErrorNote error={act.error} />
      {letters.data && letters.data.length === 0 && (
        <Empty>{t(status === "resolved" ? "no_dead_letters_resolved" : "no_dead_letters_unresolved")}</Empty>
      )}
      <ul class="list">
        {letters.data?.map((dl) => (
          <li key={dl.id} class="stack-item">
            <div class="row">
              <span class="badge">{dl.source_kind ?? "event"}</span>
              <strong>{(dl.script_id && names.get(dl.script_id)) ?? dl.script_id}</strong>
              <span class="muted small">{formatTime(dl.created_at)}</span>
              {typeof dl.attempts === "number" && (
                <span class="muted small">{t("attempts_n", { n: dl.attempts })}</span>
              )}
              {dl.resolution && <span class="badge">{dl.resolution}</span>}
            </div>
            {dl.error !== undefined && dl.error !== null && <p class="error small">{errorText(dl.error)}</p>}
            {dl.event !== undefined && dl.event !== null && (
              <details>
                <summary>{t("event")}</summary>
                <pre>{JSON.stringify(dl.event, null, 2)}</pre>
              </details>
            )}
            {!dl.resolution && (
              <div class="row">
                <button type="button" disabled={act.busy} onClick={() => resolve(dl, "replay")}>
                  {t("replay")}
                </button>
                <button type="button" disabled={act.busy} onClick={() => resolve(dl, "ignore")}>
                  {t("ignore")}
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
