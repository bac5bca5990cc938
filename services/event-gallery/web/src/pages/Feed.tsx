import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, type Delta, downloadKeepsake, type Item, type FeedPage as Page } from "../api.js";
import { me } from "../app-state.js";
import { lang, t, tn } from "../i18n.js";
import { onLive } from "../live.js";
import { enqueue, queue } from "../queue.js";
import { useStore } from "../store.js";
import { UploadQueueView } from "../UploadQueueView.js";
import { Lightbox } from "./Lightbox.js";

interface Filters {
  hashtag: string;
  uploader: string;
  /** GET /feed?mine=1: the viewer's own uploads, pending ones included. */
  mine?: boolean;
  /** GET /feed?favorites=1 and ?highlights=1 (issue 27). */
  favorites?: boolean;
  highlights?: boolean;
}

const matches = (item: Item, f: Filters) =>
  (!f.hashtag || item.hashtags.includes(f.hashtag)) &&
  (!f.uploader || item.uploader.display_name === f.uploader) &&
  (!f.favorites || !!item.favorited_by_me) &&
  (!f.highlights || !!item.highlight);

const NO_FILTERS: Filters = { hashtag: "", uploader: "", mine: false, favorites: false, highlights: false };

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
    if (filters.mine) q.set("mine", "1");
    if (filters.favorites) q.set("favorites", "1");
    if (filters.highlights) q.set("highlights", "1");
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
  }, [filters.hashtag, filters.uploader, filters.mine, filters.favorites, filters.highlights]);

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
            .map((i) => changed.get(i.id) ?? i)
            // A highlight taken back leaves the highlights list.
            .filter((i) => !filtersRef.current.highlights || i.highlight);
          // An approved upload (pre-moderation) arrives as a change of an older row: add it too
          // when it falls inside the loaded window.
          const oldest = list.at(-1)?.created_at ?? "";
          const fresh = [
            ...d.items,
            ...d.changes.filter((i) => i.approval !== "pending" && i.created_at >= oldest),
          ].filter(
            (i, n, all) =>
              all.findIndex((x) => x.id === i.id) === n &&
              !list.some((c) => c.id === i.id) &&
              matches(i, filtersRef.current),
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
      // My uploads hold pending items the delta never carries: refetch the list instead.
      if (event === "user-unhidden" || filtersRef.current.mine) {
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => reload().catch(() => {}), 300);
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

/**
 * The upload sheet: caption and hashtags, then the camera or the library. Opened from the
 * floating button so that the photos, not a form, fill the first screen on a phone.
 */
function UploadSheet({ onClose }: { onClose: () => void }) {
  const m = useStore(me);
  const [caption, setCaption] = useState("");
  const [tags, setTags] = useState("");
  const [error, setError] = useState<string | null>(null);
  const first = useRef<HTMLInputElement>(null);
  useEffect(() => {
    first.current?.focus();
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && onClose();
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, []);
  const pick = async (e: Event) => {
    const input = e.currentTarget as HTMLInputElement;
    const files = [...(input.files ?? [])];
    input.value = "";
    if (files.length === 0) return;
    try {
      setError(null);
      await enqueue(files, caption.trim(), tags.trim());
      onClose();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <div class="sheet-backdrop" onClick={(e) => e.target === e.currentTarget && onClose()}>
      <div class="sheet upload" role="dialog" aria-modal="true" aria-labelledby="upload-title">
        <h2 id="upload-title">{t("upload_sheet_title")}</h2>
        {m?.event.uploads_locked && <p class="notice">{t("uploads_locked")}</p>}
        <label>
          {t("caption")}
          <input
            ref={first}
            value={caption}
            maxLength={2000}
            onInput={(e) => setCaption(e.currentTarget.value)}
          />
        </label>
        <label>
          {t("hashtags")}
          <input value={tags} placeholder="#party #dance" onInput={(e) => setTags(e.currentTarget.value)} />
        </label>
        <div class="row sheet-actions">
          <label class="button primary" data-testid="camera">
            {t("take_photo")}
            <input type="file" accept="image/*,video/*" capture="environment" hidden onChange={pick} />
          </label>
          <label class="button primary" data-testid="library">
            {t("from_library")}
            <input
              type="file"
              accept="image/*,video/*"
              multiple
              hidden
              onChange={pick}
              data-testid="file-input"
            />
          </label>
        </div>
        {error && <p class="error">{error}</p>}
        <button type="button" class="link" onClick={onClose}>
          {t("cancel")}
        </button>
      </div>
    </div>
  );
}

function Keepsake() {
  const m = useStore(me);
  const [error, setError] = useState<string | null>(null);
  if (!m?.event.released) return null;
  const get = (kind: "zip" | "html") =>
    downloadKeepsake(kind, lang.value).catch((e) => setError(e instanceof ApiError ? e.message : t("error")));
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
  const m = useStore(me);
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const [favError, setFavError] = useState<string | null>(null);
  const [tagInput, setTagInput] = useState("");
  const [uploaders, setUploaders] = useState<{ id: string; display_name: string }[]>([]);
  const [open, setOpen] = useState<number | null>(null);
  const [sheet, setSheet] = useState(false);
  const feed = useFeed(filters);
  const sentinel = useRef<HTMLDivElement>(null);
  const q = useStore(queue);
  const doneCount = q.filter((i) => i.status === "done").length;

  useEffect(() => {
    api<{ uploaders: { id: string; display_name: string }[] }>("GET", "/uploaders")
      .then((r) => setUploaders(r.uploaders))
      .catch(() => {});
  }, [feed.items.length]);

  // A finished upload may be pending (pre-moderation): no live event brings it, so the feed (which
  // lists the guest's own pending uploads in place) and "my uploads" are read again.
  const pendingCount = q.filter((i) => i.status === "done" && i.pending).length;
  useEffect(() => {
    if ((filters.mine && doneCount > 0) || pendingCount > 0) feed.reload().catch(() => {});
  }, [doneCount, pendingCount]);

  useEffect(() => {
    const el = sentinel.current;
    if (!el) return;
    const io = new IntersectionObserver((entries) => {
      if (entries.some((e) => e.isIntersecting)) feed.more();
    });
    io.observe(el);
    return () => io.disconnect();
  });

  const canUpload = m && !m.user.is_banned && !m.event.released;
  const filtered =
    filters.hashtag || filters.uploader || filters.mine || filters.favorites || filters.highlights;
  const downloadFavorites = async () => {
    setFavError(null);
    try {
      const { ticket } = await api<{ ticket: string }>("POST", "/favorites/ticket");
      const a = document.createElement("a");
      a.href = `/api/v1/favorites.zip?ticket=${encodeURIComponent(ticket)}`;
      a.download = "Favorites.zip";
      document.body.appendChild(a);
      a.click();
      a.remove();
    } catch (e) {
      setFavError(e instanceof ApiError ? e.message : t("error"));
    }
  };

  return (
    <main class="feed">
      <Keepsake />
      {m?.user.is_banned && (
        <p class="notice warning" data-testid="banned-notice">
          {t("banned")}
        </p>
      )}
      {m?.event.uploads_locked && !m.event.released && <p class="notice">{t("uploads_locked")}</p>}
      {q.length > 0 && (
        <section class="card" aria-label={t("queue_title")}>
          <UploadQueueView />
        </section>
      )}
      <nav class="filters" aria-label={t("filters")}>
        <div class="chips" role="group">
          <button
            type="button"
            class={`chip ${!filters.mine && !filters.favorites && !filters.highlights ? "on" : ""}`}
            aria-pressed={!filters.mine && !filters.favorites && !filters.highlights}
            onClick={() => setFilters({ ...filters, mine: false, favorites: false, highlights: false })}
          >
            {t("filter_all")}
          </button>
          <button
            type="button"
            class={`chip ${filters.mine ? "on" : ""}`}
            aria-pressed={!!filters.mine}
            data-testid="mine"
            onClick={() => setFilters({ ...NO_FILTERS, mine: true })}
          >
            {t("filter_mine")}
          </button>
          <button
            type="button"
            class={`chip ${filters.favorites ? "on" : ""}`}
            aria-pressed={!!filters.favorites}
            data-testid="favorites"
            onClick={() => setFilters({ ...NO_FILTERS, favorites: true })}
          >
            ★ {t("filter_favorites")}
          </button>
          <button
            type="button"
            class={`chip ${filters.highlights ? "on" : ""}`}
            aria-pressed={!!filters.highlights}
            data-testid="highlights"
            onClick={() => setFilters({ ...NO_FILTERS, highlights: true })}
          >
            ✦ {t("filter_highlights")}
          </button>
        </div>
        {filters.favorites && feed.items.length > 0 && (
          <button type="button" class="primary small" data-testid="favorites-zip" onClick={downloadFavorites}>
            ⤓ {t("download_favorites")}
          </button>
        )}
        {!filters.mine && !filters.favorites && !filters.highlights && (
          <>
            <select
              value={filters.uploader}
              onChange={(e) => setFilters({ ...filters, uploader: e.currentTarget.value })}
              aria-label={t("all_uploaders")}
              data-testid="uploader-filter"
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
                aria-label={t("filter_tag")}
                onInput={(e) => setTagInput(e.currentTarget.value)}
              />
            </form>
          </>
        )}
        {filtered && (
          <button
            type="button"
            class="link"
            onClick={() => {
              setTagInput("");
              setFilters(NO_FILTERS);
            }}
          >
            {t("clear")}
          </button>
        )}
      </nav>
      {/* Fixed at the bottom corner, but first after the filters for the keyboard (not after every photo). */}
      {canUpload && (
        <button type="button" class="fab primary" data-testid="upload-fab" onClick={() => setSheet(true)}>
          <span aria-hidden="true">+</span> {t("upload_fab")}
        </button>
      )}
      {favError && <p class="error">{favError}</p>}
      {feed.items.length === 0 && !feed.loading && (
        <p class="empty">
          {filters.favorites ? t("no_favorites") : filters.highlights ? t("no_highlights") : t("no_items")}
        </p>
      )}
      <section class="grid">
        {feed.items.map((item, i) => (
          <button
            type="button"
            class={`tile ${item.approval === "pending" ? "is-pending" : ""}`}
            key={item.id}
            data-id={item.id}
            onClick={() => setOpen(i)}
          >
            {item.thumbnail_url || item.preview_url ? (
              <img
                src={(item.preview_url ?? item.thumbnail_url)!}
                alt={item.caption || item.uploader.display_name}
                loading="lazy"
              />
            ) : (
              <span class="processing">{t("processing")}</span>
            )}
            {item.media_type === "video" && <span class="badge">▶</span>}
            {(item.favorited_by_me || item.highlight) && (
              <span class="marks">
                {item.highlight && (
                  <span class="hl-badge" data-testid="highlight-badge">
                    ✦ {t("highlight")}
                  </span>
                )}
                {item.favorited_by_me && (
                  <span class="fav-badge" aria-label={t("favorite")}>
                    ★
                  </span>
                )}
              </span>
            )}
            {item.approval === "pending" && (
              <span class="pending-badge" data-testid="pending">
                {t("pending")}
              </span>
            )}
            <span class="meta">
              <b>{item.uploader.display_name}</b>{" "}
              <span aria-hidden="true">
                ♥ {item.like_count} ✎ {item.comment_count}
              </span>
              <span class="vh">
                {tn("likes", item.like_count)}, {tn("comments", item.comment_count)}
              </span>
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
      {sheet && <UploadSheet onClose={() => setSheet(false)} />}
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
            setFilters({ ...NO_FILTERS, hashtag: tag });
          }}
        />
      )}
    </main>
  );
}
