import { useState } from "preact/hooks";
import { api, qs, type Topic } from "../api.js";
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
      <Section title="Topics">
        <Loading resource={topics} />
        {topics.data && topics.data.length === 0 && <Empty>No registered topics.</Empty>}
        <ul class="list">
          {topics.data?.map((t) => (
            <li key={t.name}>
              <code>{t.name}</code>
              <span class="badge">{t.external ? "external" : "internal"}</span>
              <ConfirmButton
                label="Delete"
                confirm={`Delete topic ${t.name}?`}
                disabled={remove.busy}
                onConfirm={() =>
                  remove.run(async () => {
                    await api.del(`apps/${appId}/topics/${encodeURIComponent(t.name)}`);
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
      <Section title="Register a topic">
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
          <Field label="Name">
            <input name="name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <label class="check">
            <input
              type="checkbox"
              checked={external}
              onChange={(e) => setExternal(e.currentTarget.checked)}
            />
            External: subscribers with a token may listen over server-sent events
          </label>
          <ErrorNote error={create.error} />
          <button type="submit" class="primary" disabled={create.busy}>
            Register topic
          </button>
        </form>
      </Section>
    </>
  );
}
