import { useEffect, useRef, useState } from "preact/hooks";
import type { Item } from "../api.js";
import { navigate } from "../app-state.js";
import { t } from "../i18n.js";
import { useFeed } from "./Feed.js";

const SLIDE_MS = 6000;

/**
 * Fullscreen slideshow: cycles through the feed, shows new uploads next (the feed hook adds them
 * live), and skips removed or hidden ones (the hook drops them).
 */
export function SlideshowPage() {
  const feed = useFeed({ hashtag: "", uploader: "" });
  const [current, setCurrent] = useState<Item | null>(null);
  const shown = useRef(new Set<string>());
  const root = useRef<HTMLDivElement>(null);

  useEffect(() => {
    const pick = () => {
      const ready = feed.items.filter((i) => i.display_url || (i.media_type === "video" && i.thumbnail_url));
      if (ready.length === 0) return setCurrent(null);
      // Unseen uploads first (newest first), then start the round again.
      let next = ready.find((i) => !shown.current.has(i.id));
      if (!next) {
        shown.current.clear();
        next = ready[ready.length - 1];
      }
      if (!next) return;
      shown.current.add(next.id);
      setCurrent(next);
    };
    if (!current || !feed.items.some((i) => i.id === current.id)) pick();
    const timer = setInterval(pick, SLIDE_MS);
    return () => clearInterval(timer);
  }, [feed.items, current?.id]);

  return (
    <div class="slideshow" ref={root}>
      {current ? (
        <figure class="slide" key={current.id}>
          {current.media_type === "video" ? (
            <video src={current.original_url ?? undefined} autoPlay muted playsInline />
          ) : (
            <img src={current.display_url!} alt={current.caption} />
          )}
          <figcaption>
            <b>{current.uploader.display_name}</b> {current.caption}
          </figcaption>
        </figure>
      ) : (
        <p class="empty">{t("no_items")}</p>
      )}
      <div class="controls">
        <button type="button" onClick={() => root.current?.requestFullscreen?.().catch(() => {})}>
          {t("fullscreen")}
        </button>
        <button type="button" onClick={() => navigate("/")}>
          {t("close")}
        </button>
      </div>
    </div>
  );
}
