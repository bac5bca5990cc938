import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, type Delta, downloadKeepsake, type Item, type FeedPage as Page } from "../api.js";
import { me } from "../app-state.js";
import { t } from "../i18n.js";
import { onLive } from "../live.js";
import { clearDone, enqueue, queue, removeItem, retryItem } from "../queue.js";
import { useStore } from "../store.js";
import { Lightbox } from "./Lightbox.js";

interface Filters {
  hashtag: string;
  uploader: string;
}

const matches = (item: Item, f: Filters) =>
  (!f.hashtag || item.hashtags.includes(f.hashtag)) &&
  (!f.uploader || item.uploader.display_name === f.uploader);

/** The feed: newest first, infinite scroll, filters, and live updates caught up through /feed/delta. */
export function useFeed(filters: Filters) {
  const [items, setItems] = useState<Item[]>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loading, setLoading] = useState(false);
  const delta = useRef<string | null>(null);
  const deltaBusy = useRef(false);
  const filtersRef = useRef(filters);
  filtersRef.current = filters;

  const query = (cursor?: string | null) => {
    const q = new URLSearchParams({ limit: "30" });
    if (cursor) q.set("cursor", cursor);
    if (filters.hashtag) q.set("hashtag", filters.hashtag);
    if (filters.uploader) q.set("uploader", filters.uploader);
    return `/feed?${q}`;
  };

  const reload = useCallback(async () => {
    setLoading(true);
    try {
      const page = await api<Page>("GET", query());
      setItems(page.items);
      setNext(page.next_cursor);
      delta.current = page.delta_cursor;
    } finally {
      setLoading(false);
    }
  }, [filters.hashtag, filters.uploader]);

  const more = async () => {
    if (!next || loading) return;
    setLoading(true);
    try {
      const page = await api<Page>("GET", query(next));
      setItems((cur) => [...cur, ...page.items.filter((i) => !cur.some((c) => c.id === i.id))]);
      setNext(page.next_cursor);
    } finally {
      setLoading(false);
    }
  };

  const catchUp = async () => {
    if (!delta.current || deltaBusy.current) return;
    deltaBusy.current = true;
    try {
      for (;;) {
        const cursor: string = delta.current ?? "";
        const d: Delta = await api<Delta>("GET", `/feed/delta?cursor=${encodeURIComponent(cursor)}`);
        delta.current = d.cursor;
        setItems((cur) => {
          const hidden = new Set(d.hidden_user_ids);
          const removed = new Set(d.removed_ids);
          const changed = new Map([...d.changes, ...d.items].map((i) => [i.id, i]));
          let list = cur
            .filter((i) => !removed.has(i.id) && !hidden.has(i.uploader.id))
            .map((i) => changed.get(i.id) ?? i);
          const fresh = d.items.filter(
            (i) => !list.some((c) => c.id === i.id) && matches(i, filtersRef.current),
          );
          list = [...fresh, ...list].sort((a, b) => b.created_at.localeCompare(a.created_at));
          return list;
        });
        if (!d.has_more) break;
      }
    } catch {
      // The next live event or reconnect tries again.
    } finally {
      deltaBusy.current = false;
    }
  };

  useEffect(() => {
    reload().catch(() => {});
  }, [reload]);

  useEffect(() => {
    let timer: ReturnType<typeof setTimeout> | null = null;
    return onLive((event, data) => {
      if (event === "like" && typeof data.upload_id === "string") {
        setItems((cur) =>
          cur.map((i) =>
            i.id === data.upload_id ? { ...i, like_count: Number(data.like_count ?? i.like_count) } : i,
          ),
        );
        return;
      }
      if (event === "user-unhidden") {
        reload().catch(() => {});
        return;
      }
      const id = (data.id ?? data.upload_id) as string | undefined;
      if (event === "upload-removed" && id) setItems((cur) => cur.filter((i) => i.id !== id));
      if (event === "user-hidden" && typeof data.user_id === "string")
        setItems((cur) => cur.filter((i) => i.uploader.id !== data.user_id));
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => catchUp(), 200);
    });
  }, [reload]);

  return { items, setItems, more, hasMore: next !== null, loading, reload };
}

function UploadPanel() {
  const q = useStore(queue);
  const m = useStore(me);
  const [caption, setCaption] = useState("");
  const [tags, setTags] = useState("");
  const [error, setError] = useState<string | null>(null);
  const total = q.reduce((n, i) => n + i.size, 0);
  const sent = q.reduce((n, i) => n + (i.status === "done" ? i.size : i.sent), 0);
  const statusText: Record<string, string> = {
    queued: t("queued"),
    uploading: t("uploading"),
    done: t("done"),
    failed: t("failed"),
    locked: t("waiting_locked"),
  };
  if (m?.user.is_banned) return <p class="notice">{t("banned")}</p>;
  return (
    <section class="card upload">
      <h2>{t("upload")}</h2>
      {m?.event.uploads_locked && <p class="notice">{t("uploads_locked")}</p>}
      <label>
        {t("caption")}
        <input value={caption} maxLength={2000} onInput={(e) => setCaption(e.currentTarget.value)} />
      </label>
      <label>
        {t("hashtags")}
        <input value={tags} placeholder="#party #dance" onInput={(e) => setTags(e.currentTarget.value)} />
      </label>
      <label class="button primary">
        {t("add_files")}
        <input
          type="file"
          accept="image/*,video/*"
          multiple
          hidden
          onChange={async (e) => {
            const files = [...(e.currentTarget.files ?? [])];
            e.currentTarget.value = "";
            try {
              setError(null);
              await enqueue(files, caption.trim(), tags.trim());
              setCaption("");
              setTags("");
            } catch (err) {
              setError((err as Error).message);
            }
          }}
        />
      </label>
      {error && <p class="error">{error}</p>}
      {q.length > 0 && (
        <div class="queue">
          <div class="row">
            <span>
              {t("total")}: {total ? Math.floor((sent * 100) / total) : 0}%
            </span>
            <progress max={total || 1} value={sent} />
            <button type="button" class="link" onClick={clearDone}>
              {t("clear")}
            </button>
          </div>
          {q.map((i) => (
            <div class={`row q-${i.status}`} key={i.id}>
              <span class="fname">{i.name}</span>
              <progress max={i.size || 1} value={i.status === "done" ? i.size : i.sent} />
              <span class="qstatus">{statusText[i.status]}</span>
              {i.error && <span class="error small">{i.error}</span>}
              {i.status === "failed" && (
                <button type="button" class="link" onClick={() => retryItem(i.id)}>
                  {t("retry")}
                </button>
              )}
              {i.status !== "uploading" && i.status !== "done" && (
                <button type="button" class="link" onClick={() => removeItem(i.id)}>
                  {t("remove")}
                </button>
              )}
            </div>
          ))}
        </div>
      )}
    </section>
  );
}

function Keepsake() {
  const m = useStore(me);
  const [error, setError] = useState<string | null>(null);
  if (!m?.event.released) return null;
  const get = (kind: "zip" | "html") =>
    downloadKeepsake(kind).catch((e) => setError(e instanceof ApiError ? e.message : t("error")));
  return (
    <section class="card keepsake">
      <h2>{t("keepsake")}</h2>
      {m.event.keepsake_ready ? (
        <div class="row">
          <button type="button" class="primary" data-testid="dl-zip" onClick={() => get("zip")}>
            {t("download_zip")}
          </button>
          <button type="button" class="primary" data-testid="dl-html" onClick={() => get("html")}>
            {t("download_html")}
          </button>
        </div>
      ) : (
        <p>{t("keepsake_building")}</p>
      )}
      {error && <p class="error">{error}</p>}
    </section>
  );
}

export function FeedPage() {
  const [filters, setFilters] = useState<Filters>({ hashtag: "", uploader: "" });
  const [tagInput, setTagInput] = useState("");
  const [uploaders, setUploaders] = useState<{ id: string; display_name: string }[]>([]);
  const [open, setOpen] = useState<number | null>(null);
  const feed = useFeed(filters);
  const sentinel = useRef<HTMLDivElement>(null);

  useEffect(() => {
    api<{ uploaders: { id: string; display_name: string }[] }>("GET", "/uploaders")
      .then((r) => setUploaders(r.uploaders))
      .catch(() => {});
  }, [feed.items.length]);

  useEffect(() => {
    const el = sentinel.current;
    if (!el) return;
    const io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) feed.more();
    });
    io.observe(el);
    return () => io.disconnect();
  });

  return (
    <main>
      <Keepsake />
      <UploadPanel />
      <section class="filters">
        <select
          value={filters.uploader}
          onChange={(e) => setFilters({ ...filters, uploader: e.currentTarget.value })}
          aria-label={t("all_uploaders")}
        >
          <option value="">{t("all_uploaders")}</option>
          {uploaders.map((u) => (
            <option key={u.id} value={u.display_name}>
              {u.display_name}
            </option>
          ))}
        </select>
        <form
          onSubmit={(e) => {
            e.preventDefault();
            setFilters({ ...filters, hashtag: tagInput.trim().replace(/^#/, "").toLowerCase() });
          }}
        >
          <input
            value={tagInput}
            placeholder={t("filter_tag")}
            onInput={(e) => setTagInput(e.currentTarget.value)}
          />
        </form>
        {(filters.hashtag || filters.uploader) && (
          <button
            type="button"
            class="link"
            onClick={() => {
              setTagInput("");
              setFilters({ hashtag: "", uploader: "" });
            }}
          >
            {t("clear")}
          </button>
        )}
      </section>
      {feed.items.length === 0 && !feed.loading && <p class="empty">{t("no_items")}</p>}
      <section class="grid">
        {feed.items.map((item, i) => (
          <button type="button" class="tile" key={item.id} data-id={item.id} onClick={() => setOpen(i)}>
            {item.thumbnail_url || item.preview_url ? (
              <img src={(item.preview_url ?? item.thumbnail_url)!} alt={item.caption} loading="lazy" />
            ) : (
              <span class="processing">{t("processing")}</span>
            )}
            {item.media_type === "video" && <span class="badge">▶</span>}
            <span class="meta">
              <b>{item.uploader.display_name}</b> ♥ {item.like_count} ✎ {item.comment_count}
            </span>
            {item.caption && <span class="cap">{item.caption}</span>}
          </button>
        ))}
      </section>
      <div ref={sentinel} class="sentinel" />
      {feed.hasMore && (
        <button type="button" class="link" onClick={() => feed.more()}>
          {t("load_more")}
        </button>
      )}
      {open !== null && feed.items[open] && (
        <Lightbox
          items={feed.items}
          index={open}
          onIndex={setOpen}
          onClose={() => setOpen(null)}
          onChange={(item) => feed.setItems((cur) => cur.map((c) => (c.id === item.id ? item : c)))}
          onRemoved={(id) => {
            feed.setItems((cur) => cur.filter((c) => c.id !== id));
            setOpen(null);
          }}
          onTag={(tag) => {
            setOpen(null);
            setTagInput(tag);
            setFilters({ ...filters, hashtag: tag });
          }}
        />
      )}
    </main>
  );
}
