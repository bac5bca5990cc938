import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, type Comment, type Item } from "../api.js";
import { me } from "../app-state.js";
import { t, tn } from "../i18n.js";
import { onLive } from "../live.js";
import { downloadName, shareItem } from "../share.js";
import { useStore } from "../store.js";

interface Props {
  items: Item[];
  index: number;
  onIndex(i: number): void;
  onClose(): void;
  onChange(item: Item): void;
  onRemoved(id: string): void;
  onTag(tag: string): void;
}

/** One upload large: swipe or ←/→ to move, Esc to close; videos play the original. */
export function Lightbox({ items, index, onIndex, onClose, onChange, onRemoved, onTag }: Props) {
  const item = items[index]!;
  const m = useStore(me);
  const [comments, setComments] = useState<Comment[]>([]);
  const [text, setText] = useState("");
  const [editing, setEditing] = useState(false);
  const [caption, setCaption] = useState(item.caption);
  const [tags, setTags] = useState(item.hashtags.join(" "));
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const touchX = useRef<number | null>(null);
  const isHost = m?.user.role === "host" || m?.user.role === "admin";
  const mine = m?.user.id === item.uploader.id;

  const go = (d: number) => {
    const n = index + d;
    if (n >= 0 && n < items.length) onIndex(n);
  };
  const guard = async (fn: () => Promise<void>) => {
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : t("error"));
    }
  };
  const loadComments = () =>
    api<{ comments: Comment[] }>("GET", `/upload/${item.id}/comments`)
      .then((r) => setComments(r.comments))
      .catch(() => setComments([]));

  useEffect(() => {
    setEditing(false);
    setCaption(item.caption);
    setTags(item.hashtags.join(" "));
    loadComments();
    return onLive((event, data) => {
      if ((event === "comment-added" || event === "comment-removed") && data.upload_id === item.id)
        loadComments();
    });
  }, [item.id]);

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if ((e.target as HTMLElement).tagName === "INPUT") return;
      if (e.key === "Escape") onClose();
      if (e.key === "ArrowLeft") go(-1);
      if (e.key === "ArrowRight") go(1);
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  });

  const toggleLike = () =>
    guard(async () => {
      const r = await api<{ liked: boolean; like_count: number }>(
        item.liked_by_me ? "DELETE" : "PUT",
        `/upload/${item.id}/like`,
      );
      onChange({ ...item, liked_by_me: r.liked, like_count: r.like_count });
    });

  // Issue 27: a private star, and a host's highlight.
  const toggleFavorite = () =>
    guard(async () => {
      await api(item.favorited_by_me ? "DELETE" : "PUT", `/upload/${item.id}/favorite`);
      onChange({ ...item, favorited_by_me: !item.favorited_by_me });
    });
  const toggleHighlight = () =>
    guard(async () => {
      await api(item.highlight ? "DELETE" : "PUT", `/host/upload/${item.id}/highlight`);
      onChange({ ...item, highlight: !item.highlight });
    });

  return (
    <div
      class="lightbox"
      role="dialog"
      aria-modal="true"
      onTouchStart={(e) => {
        touchX.current = e.touches[0]?.clientX ?? null;
      }}
      onTouchEnd={(e) => {
        const start = touchX.current;
        touchX.current = null;
        const end = e.changedTouches[0]?.clientX;
        if (start === null || end === undefined) return;
        if (Math.abs(end - start) > 50) go(end < start ? 1 : -1);
      }}
    >
      <div class="stage">
        {item.media_type === "video" ? (
          <video
            src={item.original_url ?? undefined}
            controls
            playsInline
            autoPlay
            poster={item.thumbnail_url ?? undefined}
          />
        ) : (
          <img src={(item.display_url ?? item.preview_url ?? item.original_url)!} alt={item.caption} />
        )}
        <button type="button" class="nav prev" aria-label="previous" onClick={() => go(-1)}>
          ‹
        </button>
        <button type="button" class="nav next" aria-label="next" onClick={() => go(1)}>
          ›
        </button>
        <button type="button" class="nav close" aria-label={t("close")} onClick={onClose}>
          ×
        </button>
      </div>
      <aside class="details">
        <p>
          {item.approval === "pending" && <span class="pending-badge">{t("pending")}</span>}{" "}
          <b>{item.uploader.display_name}</b>{" "}
          <span class="muted">{new Date(item.created_at).toLocaleString()}</span>
        </p>
        {editing ? (
          <form
            onSubmit={(e) => {
              e.preventDefault();
              guard(async () => {
                const r = await api<{ upload: Item }>("PATCH", `/upload/${item.id}`, {
                  caption,
                  hashtags: tags,
                });
                onChange({ ...item, ...r.upload });
                setEditing(false);
              });
            }}
          >
            <input
              value={caption}
              onInput={(e) => setCaption(e.currentTarget.value)}
              aria-label={t("caption")}
            />
            <input value={tags} onInput={(e) => setTags(e.currentTarget.value)} aria-label={t("hashtags")} />
            <button type="submit" class="primary">
              {t("save")}
            </button>
            <button type="button" class="link" onClick={() => setEditing(false)}>
              {t("cancel")}
            </button>
          </form>
        ) : (
          <>
            {item.caption && <p class="caption">{item.caption}</p>}
            <p class="tags">
              {item.hashtags.map((h) => (
                <button type="button" class="link tag" key={h} onClick={() => onTag(h)}>
                  #{h}
                </button>
              ))}
            </p>
          </>
        )}
        <div class="row">
          <button
            type="button"
            class={`like ${item.liked_by_me ? "on" : ""}`}
            onClick={toggleLike}
            aria-label={`${t("like")}: ${tn("likes", item.like_count)}`}
            aria-pressed={item.liked_by_me}
          >
            ♥ {item.like_count}
          </button>
          <button
            type="button"
            class={`fav ${item.favorited_by_me ? "on" : ""}`}
            onClick={toggleFavorite}
            aria-pressed={!!item.favorited_by_me}
            data-testid="favorite"
          >
            {item.favorited_by_me ? "★" : "☆"} {t("favorite")}
          </button>
          {isHost && (
            <button
              type="button"
              class={`hl ${item.highlight ? "on" : ""}`}
              onClick={toggleHighlight}
              aria-pressed={!!item.highlight}
              data-testid="highlight"
            >
              ✦ {t("highlight")}
            </button>
          )}
          {item.original_url && (
            <a
              class="button link"
              href={item.original_url}
              download={downloadName(item)}
              data-testid="download"
            >
              ⤓ {t("download")}
            </a>
          )}
          <button
            type="button"
            class="link"
            data-testid="share"
            onClick={() => shareItem(item).then(setNote)}
          >
            ⇪ {t("share")}
          </button>
          {note && (
            <span class="muted small" role="status">
              {note}
            </span>
          )}
          {mine && !editing && (
            <button type="button" class="link" onClick={() => setEditing(true)}>
              {t("edit")}
            </button>
          )}
          {mine && (
            <button
              type="button"
              class="link danger"
              onClick={() =>
                confirm(t("confirm_delete")) &&
                guard(async () => {
                  await api("DELETE", `/upload/${item.id}`);
                  onRemoved(item.id);
                })
              }
            >
              {t("delete")}
            </button>
          )}
          {isHost && !mine && (
            <button
              type="button"
              class="link danger"
              data-testid="takedown"
              onClick={() =>
                confirm(t("confirm_delete")) &&
                guard(async () => {
                  await api("DELETE", `/host/upload/${item.id}`);
                  onRemoved(item.id);
                })
              }
            >
              {t("takedown")}
            </button>
          )}
        </div>
        <h3>{t("comments")}</h3>
        <ul class="comments">
          {comments.map((c) => (
            <li key={c.id}>
              <b>{c.user.display_name}</b> {c.text}
              {(c.user.id === m?.user.id || isHost) && (
                <button
                  type="button"
                  class="link small"
                  onClick={() =>
                    guard(async () => {
                      await api(
                        "DELETE",
                        c.user.id === m?.user.id ? `/comment/${c.id}` : `/host/comment/${c.id}`,
                      );
                      await loadComments();
                    })
                  }
                >
                  ×
                </button>
              )}
            </li>
          ))}
        </ul>
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            if (!text.trim()) return;
            guard(async () => {
              await api("POST", `/upload/${item.id}/comments`, { text });
              setText("");
              await loadComments();
              onChange({ ...item, comment_count: item.comment_count + 1 });
            });
          }}
        >
          <input
            value={text}
            maxLength={500}
            placeholder={t("add_comment")}
            onInput={(e) => setText(e.currentTarget.value)}
          />
          <button type="submit">{t("send")}</button>
        </form>
        {error && <p class="error">{error}</p>}
      </aside>
    </div>
  );
}
