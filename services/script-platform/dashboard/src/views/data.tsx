import { useState } from "preact/hooks";
import { api, qs } from "../api.js";
import { t } from "../i18n.js";
import {
  ConfirmButton,
  Empty,
  ErrorNote,
  Field,
  formatTime,
  MoreButton,
  type Paged,
  Section,
  useAction,
  usePaged,
} from "../ui.js";

interface KvItem {
  collection: string;
  key: string;
  value: unknown;
  updated_at: string;
}
interface DocItem {
  collection: string;
  id: string;
  data: unknown;
  created_at: string;
  updated_at: string;
}

const enc = encodeURIComponent;

/** An app's kv entries and documents: list with a cursor, view, delete (deletes fire triggers). */
export function DataPage({ appId }: { appId: string }) {
  const [kind, setKind] = useState<"kv" | "docs">("kv");
  const [collection, setCollection] = useState("");
  const [prefix, setPrefix] = useState("");
  const [open, setOpen] = useState<string | null>(null);
  const remove = useAction();
  const kv = usePaged<KvItem>(
    (cursor) => `apps/${appId}/kv${qs({ collection, prefix, cursor })}`,
    [appId, collection, prefix],
  );
  const docs = usePaged<DocItem>(
    (cursor) => `apps/${appId}/docs${qs({ collection, cursor })}`,
    [appId, collection],
  );
  const list = kind === "kv" ? kv : docs;
  return (
    <Section title={t("data")}>
      <div class="grid filters">
        <Field label={t("store")}>
          <select name="store" value={kind} onChange={(e) => setKind(e.currentTarget.value as "kv" | "docs")}>
            <option value="kv">kv</option>
            <option value="docs">docs</option>
          </select>
        </Field>
        <Field label={t("collection")} hint={t("collection_hint")}>
          <input
            name="collection"
            value={collection}
            onChange={(e) => setCollection(e.currentTarget.value)}
          />
        </Field>
        {kind === "kv" && (
          <Field label={t("key_prefix")}>
            <input name="prefix" value={prefix} onChange={(e) => setPrefix(e.currentTarget.value)} />
          </Field>
        )}
      </div>
      <p class="muted small">{t("data_note")}</p>
      <ErrorNote error={list.error} />
      {list.data && list.data.length === 0 && (
        <Empty>{collection ? t("nothing_stored_in", { c: collection }) : t("nothing_stored")}</Empty>
      )}
      <ul class="list" data-testid="data-items">
        {(kind === "kv"
          ? (kv.data ?? []).map((i) => ({ c: i.collection, name: i.key, at: i.updated_at, value: i.value }))
          : (docs.data ?? []).map((d) => ({ c: d.collection, name: d.id, at: d.updated_at, value: d.data }))
        ).map((row) => {
          const id = `${row.c}/${row.name}`;
          return (
            <li key={id} class="stack">
              <div class="row wrap">
                <button type="button" class="plain" onClick={() => setOpen(open === id ? null : id)}>
                  <code>{row.c}</code> / <strong>{row.name}</strong>{" "}
                  <span class="muted small">{formatTime(row.at)}</span>
                </button>
                <ConfirmButton
                  label={t("delete")}
                  confirm={t("delete_confirm", { what: id })}
                  disabled={remove.busy}
                  onConfirm={() =>
                    remove.run(async () => {
                      await api.del(`apps/${appId}/${kind}/${enc(row.c)}/${enc(row.name)}`);
                      list.reload();
                    })
                  }
                />
              </div>
              {open === id && <pre>{JSON.stringify(row.value, null, 2)}</pre>}
            </li>
          );
        })}
      </ul>
      <MoreButton paged={list as Paged<unknown>} />
      <ErrorNote error={remove.error} />
    </Section>
  );
}
