import { useState } from "preact/hooks";
import { api, qs } from "../api.js";
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
    <Section title="Data">
      <div class="grid filters">
        <Field label="Store">
          <select name="store" value={kind} onChange={(e) => setKind(e.currentTarget.value as "kv" | "docs")}>
            <option value="kv">kv</option>
            <option value="docs">docs</option>
          </select>
        </Field>
        <Field label="Collection" hint="Empty: every collection.">
          <input
            name="collection"
            value={collection}
            onChange={(e) => setCollection(e.currentTarget.value)}
          />
        </Field>
        {kind === "kv" && (
          <Field label="Key prefix">
            <input name="prefix" value={prefix} onChange={(e) => setPrefix(e.currentTarget.value)} />
          </Field>
        )}
      </div>
      <p class="muted small">
        Files are under the Files API; deleting here fires kv and docs triggers like a script's delete.
      </p>
      <ErrorNote error={list.error} />
      {list.data && list.data.length === 0 && (
        <Empty>Nothing stored{collection ? ` in ${collection}` : ""}.</Empty>
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
                  label="Delete"
                  confirm={`Delete ${id}?`}
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
