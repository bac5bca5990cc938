import { useState } from "preact/hooks";
import { api, qs, type Topic } from "../api.js";
import { t } from "../i18n.js";
import {
  ConfirmButton,
  Empty,
  ErrorNote,
  Field,
  Loading,
  MoreButton,
  Section,
  useAction,
  usePaged,
} from "../ui.js";

export function TopicsPage({ appId }: { appId: string }) {
  const topics = usePaged<Topic>((cursor) => `apps/${appId}/topics${qs({ cursor })}`, [appId]);
  const [name, setName] = useState("");
  const [external, setExternal] = useState(false);
  const create = useAction();
  const remove = useAction();
  return (
    <>
      <Section title={t("topics")}>
        <Loading resource={topics} />
        {topics.data && topics.data.length === 0 && <Empty>{t("no_topics")}</Empty>}
        <ul class="list">
          {topics.data?.map((topic) => (
            <li key={topic.name}>
              <code>{topic.name}</code>
              <span class="badge">{topic.external ? t("external") : t("internal")}</span>
              <ConfirmButton
                label={t("delete")}
                confirm={t("delete_topic_confirm", { name: topic.name })}
                disabled={remove.busy}
                onConfirm={() =>
                  remove.run(async () => {
                    await api.del(`apps/${appId}/topics/${encodeURIComponent(topic.name)}`);
                    topics.reload();
                  })
                }
              />
            </li>
          ))}
        </ul>
        <MoreButton paged={topics} />
        <ErrorNote error={remove.error} />
      </Section>
      <Section title={t("register_topic_title")}>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            create.run(async () => {
              await api.post(`apps/${appId}/topics`, { name, external });
              setName("");
              setExternal(false);
              topics.reload();
            });
          }}
        >
          <Field label={t("name")}>
            <input name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <label class="check">
            <input
              type="checkbox"
              checked={external}
              onChange={(e) => setExternal(e.currentTarget.checked)}
            />
            {t("topic_external")}
          </label>
          <ErrorNote error={create.error} />
          <button type="submit" class="primary" disabled={create.busy}>
            {t("register_topic")}
          </button>
        </form>
      </Section>
    </>
  );
}
