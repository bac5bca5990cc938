import { useState } from "preact/hooks";
import { allScripts, api, qs, type Script, type Trigger } from "../api.js";
import { t } from "../i18n.js";
import {
  ConfirmButton,
  Empty,
  ErrorNote,
  Field,
  Loading,
  MoreButton,
  parseJsonField,
  Section,
  useAction,
  usePaged,
  useResource,
} from "../ui.js";

const KINDS = ["kv", "docs", "files", "pubsub", "cron", "email", "dead_letter"] as const;
type Kind = (typeof KINDS)[number];
const OPERATIONS: Record<string, string[]> = {
  kv: ["set", "delete"],
  docs: ["create", "update", "delete"],
  files: ["create", "update", "delete"],
};
const DETAIL_KEYS = [
  "collection",
  "operations",
  "topic",
  "schedule",
  "timezone",
  "next_due_at",
  "has_inbound_secret",
];

/** One line naming what a trigger listens to, from its flattened or nested detail. */
function describeDetail(tg: Trigger): string {
  const detail = (typeof tg.detail === "object" && tg.detail ? tg.detail : tg) as Record<string, unknown>;
  return DETAIL_KEYS.filter((k) => detail[k] !== undefined && detail[k] !== null)
    .map(
      (k) =>
        `${k}: ${Array.isArray(detail[k]) ? (detail[k] as unknown[]).join(", ") || t("all_ops") : String(detail[k])}`,
    )
    .join(" · ");
}

/** The trigger's effective retry policy (the API fills in the platform defaults). */
function describeRetry(r: unknown): string {
  const p = r as { max_attempts?: number; backoff_ms?: number; max_backoff_ms?: number } | null | undefined;
  if (!p || typeof p.max_attempts !== "number") return "";
  return t("retry_line", { n: p.max_attempts, first: String(p.backoff_ms), max: String(p.max_backoff_ms) });
}

export function TriggersPage({ appId }: { appId: string }) {
  const triggers = usePaged<Trigger>((cursor) => `apps/${appId}/triggers${qs({ cursor })}`, [appId]);
  const scripts = useResource(() => allScripts(appId), [appId]);
  const act = useAction();
  const names = new Map(scripts.data?.map((s) => [s.id, s.name]));
  return (
    <>
      <Section title={t("triggers")}>
        <Loading resource={triggers} />
        {triggers.data && triggers.data.length === 0 && <Empty>{t("no_triggers")}</Empty>}
        <ul class="list">
          {triggers.data?.map((tg) => (
            <li key={tg.id} class="stack-item">
              <div class="row">
                <span class="badge">{tg.kind}</span>
                <strong>{names.get(tg.script_id) ?? tg.script_id}</strong>
                <span class={tg.enabled ? "ok small" : "muted small"}>
                  {tg.enabled ? t("enabled") : t("disabled")}
                </span>
              </div>
              <span class="muted small">{describeDetail(tg)}</span>
              <span class="muted small" data-testid="trigger-retry">
                {describeRetry(tg.retry)}
              </span>
              <div class="row">
                <button
                  type="button"
                  disabled={act.busy}
                  onClick={() =>
                    act.run(async () => {
                      await api.patch(`apps/${appId}/triggers/${tg.id}`, { enabled: !tg.enabled });
                      triggers.reload();
                    })
                  }
                >
                  {tg.enabled ? t("disable") : t("enable")}
                </button>
                <ConfirmButton
                  label={t("delete")}
                  confirm={t("delete_trigger_confirm", { kind: tg.kind })}
                  disabled={act.busy}
                  onConfirm={() =>
                    act.run(async () => {
                      await api.del(`apps/${appId}/triggers/${tg.id}`);
                      triggers.reload();
                    })
                  }
                />
              </div>
            </li>
          ))}
        </ul>
        <MoreButton paged={triggers} />
        <ErrorNote error={act.error} />
      </Section>
      <Section title={t("new_trigger")}>
        <Loading resource={scripts} />
        {scripts.data && (
          <NewTrigger
            appId={appId}
            scripts={scripts.data.filter((s) => s.kind === "endpoint")}
            onCreated={triggers.reload}
          />
        )}
      </Section>
    </>
  );
}

function NewTrigger(props: { appId: string; scripts: Script[]; onCreated: () => void }) {
  const [kind, setKind] = useState<Kind>("cron");
  const [scriptId, setScriptId] = useState(props.scripts[0]?.id ?? "");
  const [collection, setCollection] = useState("*");
  const [operations, setOperations] = useState<string[]>([]);
  const [topic, setTopic] = useState("");
  const [schedule, setSchedule] = useState("0 */5 * * * *");
  const [timezone, setTimezone] = useState(Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC");
  const [inboundSecret, setInboundSecret] = useState("");
  const [retry, setRetry] = useState("");
  const [enabled, setEnabled] = useState(true);
  const create = useAction();

  const detail = (): Record<string, unknown> => {
    switch (kind) {
      case "kv":
      case "docs":
      case "files":
        return { collection, operations };
      case "pubsub":
        return { topic };
      case "cron":
        return { schedule, timezone };
      case "email":
        return inboundSecret ? { inbound_secret: inboundSecret } : {};
      case "dead_letter":
        return {};
    }
  };

  if (props.scripts.length === 0) return <Empty>{t("endpoint_first")}</Empty>;
  return (
    <form
      class="stack"
      onSubmit={(e) => {
        e.preventDefault();
        create.run(async () => {
          const body: Record<string, unknown> = { script_id: scriptId, enabled, ...detail() };
          const r = parseJsonField(t("retry_json"), retry);
          if (r !== undefined) body.retry = r;
          await api.post(`apps/${props.appId}/triggers/${kind}`, body);
          // A fresh form for the next trigger (the kind and script stay: often several alike).
          setCollection("*");
          setOperations([]);
          setTopic("");
          setInboundSecret("");
          setRetry("");
          setEnabled(true);
          props.onCreated();
        });
      }}
    >
      <div class="grid">
        <Field label={t("kind")}>
          <select
            name="kind"
            value={kind}
            onChange={(e) => {
              setKind(e.currentTarget.value as Kind);
              setOperations([]);
            }}
          >
            {KINDS.map((k) => (
              <option key={k}>{k}</option>
            ))}
          </select>
        </Field>
        <Field label={t("script")}>
          <select name="script_id" value={scriptId} onChange={(e) => setScriptId(e.currentTarget.value)}>
            {props.scripts.map((s) => (
              <option key={s.id} value={s.id}>
                {s.name}
              </option>
            ))}
          </select>
        </Field>
      </div>
      {OPERATIONS[kind] && (
        <>
          <Field label={t("collection")} hint={t("collection_pattern_hint")}>
            <input
              name="collection"
              required
              value={collection}
              onInput={(e) => setCollection(e.currentTarget.value)}
            />
          </Field>
          <fieldset class="row">
            <legend>{t("operations_legend")}</legend>
            {OPERATIONS[kind].map((op) => (
              <label key={op} class="check">
                <input
                  type="checkbox"
                  checked={operations.includes(op)}
                  onChange={(e) =>
                    setOperations(
                      e.currentTarget.checked ? [...operations, op] : operations.filter((o) => o !== op),
                    )
                  }
                />
                {op}
              </label>
            ))}
          </fieldset>
        </>
      )}
      {kind === "pubsub" && (
        <Field label={t("topic")} hint={t("topic_pattern_hint")}>
          <input name="topic" required value={topic} onInput={(e) => setTopic(e.currentTarget.value)} />
        </Field>
      )}
      {kind === "cron" && (
        <div class="grid">
          <Field label={t("schedule")} hint={t("schedule_hint")}>
            <input
              name="schedule"
              required
              value={schedule}
              onInput={(e) => setSchedule(e.currentTarget.value)}
            />
          </Field>
          <Field label={t("time_zone")}>
            <input
              name="timezone"
              required
              value={timezone}
              onInput={(e) => setTimezone(e.currentTarget.value)}
            />
          </Field>
        </div>
      )}
      {kind === "email" && (
        <Field label={t("inbound_secret")} hint={t("inbound_secret_hint")}>
          <input
            name="inbound_secret"
            type="password"
            autoComplete="off"
            value={inboundSecret}
            onInput={(e) => setInboundSecret(e.currentTarget.value)}
          />
        </Field>
      )}
      <Field label={t("retry_optional")} hint={t("retry_hint")}>
        <input name="retry" value={retry} onInput={(e) => setRetry(e.currentTarget.value)} />
      </Field>
      <label class="check">
        <input type="checkbox" checked={enabled} onChange={(e) => setEnabled(e.currentTarget.checked)} />
        {t("enabled_check")}
      </label>
      <ErrorNote error={create.error} />
      <button type="submit" class="primary" disabled={create.busy}>
        {t("create_trigger")}
      </button>
    </form>
  );
}
