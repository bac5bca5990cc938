import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, type Item } from "../api.js";
import { t, tf, tn } from "../i18n.js";
import { onLive } from "../live.js";

/**
 * The pending queue of the host page (issue 27): each upload large (photos as their preview,
 * videos playable), with caption, tags and uploader; approve or reject each, select several and
 * approve them together, or approve everything. On a desktop keyboard: J/K (or arrows) move,
 * A approves, R rejects, X selects, Shift+A approves the selection. `onCount` feeds the live
 * count in the page header.
 */
export function PendingQueue({ onCount }: { onCount: (n: number) => void }) {
  const [items, setItems] = useState<Item[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [focus, setFocus] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const list = useRef<HTMLUListElement>(null);

  const load = async () => {
    const r = await api<{ items: Item[]; next_cursor: string | null }>("GET", "/host/pending?limit=100");
    setItems(r.items);
    setNext(r.next_cursor);
    setSelected((cur) => new Set(r.items.filter((i) => cur.has(i.id)).map((i) => i.id)));
    onCount(r.items.length);
  };
  const more = async () => {
    if (!next) return;
    const r = await api<{ items: Item[]; next_cursor: string | null }>(
      "GET",
      `/host/pending?limit=100&cursor=${encodeURIComponent(next)}`,
    );
    setItems((cur) => [...cur, ...r.items.filter((i) => !cur.some((c) => c.id === i.id))]);
    setNext(r.next_cursor);
  };
  useEffect(() => {
    load().catch(() => {});
    return onLive((event) => {
      if (["upload-pending", "new-upload", "upload-removed", "user-hidden", "reconnected"].includes(event))
        load().catch(() => {});
    });
  }, []);

  const run = async (work: () => Promise<unknown>, done: string[]) => {
    setError(null);
    setBusy(true);
    try {
      await work();
      // Gone from the queue at once; the reload confirms.
      setItems((cur) => cur.filter((i) => !done.includes(i.id)));
      setSelected((cur) => new Set([...cur].filter((id) => !done.includes(id))));
    } catch (e) {
      setError(e instanceof ApiError ? e.message : t("error"));
    } finally {
      setBusy(false);
    }
    await load().catch(() => {});
  };
  const approve = (id: string) => run(() => api("POST", `/host/upload/${id}/approve`), [id]);
  const reject = (id: string) => {
    if (!confirm(t("confirm_reject"))) return;
    return run(() => api("POST", `/host/upload/${id}/reject`), [id]);
  };
  const approveSelected = () => {
    const ids = [...selected];
    if (ids.length === 0) return;
    return run(() => api("POST", "/host/pending:approve", { ids }), ids);
  };
  const approveAll = () => {
    if (!confirm(tf("mod_confirm_all", { n: String(items.length) }))) return;
    return run(
      () => api("POST", "/host/pending:approve", { all: true }),
      items.map((i) => i.id),
    );
  };
  const toggle = (id: string) =>
    setSelected((cur) => {
      const s = new Set(cur);
      if (s.has(id)) s.delete(id);
      else s.add(id);
      return s;
    });

  // Desktop keyboard shortcuts (never while typing in a field).
  const state = useRef({ items, focus, selected, busy });
  state.current = { items, focus, selected, busy };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const el = e.target as HTMLElement | null;
      if (el && /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName) && (el as HTMLInputElement).type !== "checkbox")
        return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const s = state.current;
      if (s.items.length === 0 || s.busy) return;
      const at = Math.min(s.focus, s.items.length - 1);
      const current = s.items[at];
      const key = e.key.toLowerCase();
      let move = 0;
      if (key === "j" || e.key === "ArrowDown") move = 1;
      else if (key === "k" || e.key === "ArrowUp") move = -1;
      else if (key === "a" && e.shiftKey) void approveSelected();
      else if (key === "a" && current) void approve(current.id);
      else if (key === "r" && current) void reject(current.id);
      else if (key === "x" && current) toggle(current.id);
      else return;
      e.preventDefault();
      if (move !== 0) {
        const n = Math.max(0, Math.min(s.items.length - 1, at + move));
        setFocus(n);
        list.current?.children[n]?.scrollIntoView({ block: "nearest", behavior: "smooth" });
      }
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, []);

  if (items.length === 0) return null;
  const allSelected = selected.size === items.length;
  return (
    <section class="card pending" data-testid="pending-queue">
      <h2>
        {t("pending_title")}{" "}
        <span class="badge-count" data-testid="pending-badge" title={tn("waiting", items.length)}>
          {items.length}
        </span>
      </h2>
      <div class="mod-bar">
        <label class="mod-select-all">
          <input
            type="checkbox"
            checked={allSelected}
            data-testid="select-all"
            onChange={() => setSelected(allSelected ? new Set() : new Set(items.map((i) => i.id)))}
          />{" "}
          {t("mod_select_all")}
        </label>
        {selected.size > 0 && (
          <button
            type="button"
            class="primary"
            disabled={busy}
            data-testid="approve-selected"
            onClick={approveSelected}
          >
            {tf("mod_approve_selected", { n: String(selected.size) })}
          </button>
        )}
        <button type="button" disabled={busy} data-testid="approve-all" onClick={approveAll}>
          {tf("mod_approve_all", { n: String(items.length) })}
        </button>
      </div>
      <p class="small muted mod-keys">{t("mod_keys")}</p>
      {error && <p class="error">{error}</p>}
      <ul class="mod-list" ref={list}>
        {items.map((i, n) => (
          <li
            key={i.id}
            data-id={i.id}
            class={`${n === Math.min(focus, items.length - 1) ? "focused" : ""} ${selected.has(i.id) ? "selected" : ""}`}
            onClick={() => setFocus(n)}
          >
            <div class="mod-media">
              {i.media_type === "video" && i.original_url ? (
                <video
                  src={i.original_url}
                  poster={i.thumbnail_url ?? undefined}
                  controls
                  playsInline
                  preload="metadata"
                  data-testid="pending-video"
                />
              ) : i.preview_url || i.thumbnail_url ? (
                <img
                  src={(i.preview_url ?? i.thumbnail_url) as string}
                  alt={i.caption || i.uploader.display_name}
                  loading="lazy"
                  data-testid="pending-preview"
                />
              ) : (
                <span class="processing">{t("processing")}</span>
              )}
            </div>
            <div class="mod-info">
              <label class="mod-pick">
                <input
                  type="checkbox"
                  checked={selected.has(i.id)}
                  onChange={() => toggle(i.id)}
                  data-testid="select"
                  aria-label={`${t("mod_select")}: ${i.uploader.display_name}`}
                />
                <b>{i.uploader.display_name}</b>
              </label>
              {i.caption && <p class="mod-caption">{i.caption}</p>}
              {i.hashtags.length > 0 && (
                <p class="mod-tags">
                  {i.hashtags.map((h) => (
                    <span class="chip" key={h}>
                      #{h}
                    </span>
                  ))}
                </p>
              )}
              <span class="row">
                <button
                  type="button"
                  class="primary"
                  disabled={busy}
                  data-testid="approve"
                  onClick={() => approve(i.id)}
                >
                  {t("approve")}
                </button>
                <button
                  type="button"
                  class="danger"
                  disabled={busy}
                  data-testid="reject"
                  onClick={() => reject(i.id)}
                >
                  {t("reject")}
                </button>
              </span>
            </div>
          </li>
        ))}
      </ul>
      {next && (
        <button type="button" class="link" onClick={() => more().catch(() => {})}>
          {t("mod_more")}
        </button>
      )}
    </section>
  );
}
