import { useState } from "preact/hooks";
import { api, qs, type Secret } from "../api.js";
import { t } from "../i18n.js";
import {
  ConfirmButton,
  Empty,
  ErrorNote,
  Field,
  formatTime,
  Loading,
  MoreButton,
  parseJsonField,
  Section,
  useAction,
  usePaged,
} from "../ui.js";

export function SecretsPage({ appId }: { appId: string }) {
  const secrets = usePaged<Secret>((cursor) => `apps/${appId}/secrets${qs({ cursor })}`, [appId]);
  const [name, setName] = useState("");
  const [value, setValue] = useState("");
  const [asJson, setAsJson] = useState(false);
  const set = useAction();
  const remove = useAction();
  return (
    <>
      <Section title={t("secrets")}>
        <p class="muted small">{t("secrets_write_only")}</p>
        <Loading resource={secrets} />
        {secrets.data && secrets.data.length === 0 && <Empty>{t("no_secrets")}</Empty>}
        <ul class="list">
          {secrets.data?.map((s) => (
            <li key={s.name}>
              <code>{s.name}</code>
              <span class="muted small">{t("updated_at", { at: formatTime(s.updated_at) })}</span>
              <ConfirmButton
                label={t("delete")}
                confirm={t("delete_secret_confirm", { name: s.name })}
                disabled={remove.busy}
                onConfirm={() =>
                  remove.run(async () => {
                    await api.del(`apps/${appId}/secrets/${encodeURIComponent(s.name)}`);
                    secrets.reload();
                  })
                }
              />
            </li>
          ))}
        </ul>
        <MoreButton paged={secrets} />
        <ErrorNote error={remove.error} />
      </Section>
      <Section title={t("set_secret")}>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            set.run(async () => {
              const v = asJson ? parseJsonField(t("value"), value) : value;
              await api.post(`apps/${appId}/secrets`, { name, value: v });
              setName("");
              setValue("");
              secrets.reload();
            });
          }}
        >
          <Field label={t("name")} hint={t("secret_name_hint")}>
            <input name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <Field label={t("value")}>
            <textarea
              name="value"
              rows={3}
              autoComplete="off"
              spellcheck={false}
              value={value}
              onInput={(e) => setValue(e.currentTarget.value)}
            />
          </Field>
          <label class="check">
            <input type="checkbox" checked={asJson} onChange={(e) => setAsJson(e.currentTarget.checked)} />
            {t("value_is_json")}
          </label>
          <ErrorNote error={set.error} />
          <button type="submit" class="primary" disabled={set.busy}>
            {t("save_secret")}
          </button>
        </form>
      </Section>
    </>
  );
}
