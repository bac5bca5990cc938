import { useEffect, useRef, useState } from "preact/hooks";
import { api, type Delta, type FeedPage } from "../api.js";
import { navigate } from "../app-state.js";
import { joinUrl, publicEvent } from "../branding.js";
import { lang, t } from "../i18n.js";
import { connected, onLive } from "../live.js";
import { useQrDataUrl } from "../qr.js";
import { browserTimers, type ShownSlide, SlideshowController } from "../slideshow-controller.js";
import { useStore } from "../store.js";

/** Kept items at most (new uploads beyond it push the oldest out of the rotation). */
const CAPACITY = 300;
/** Matches the CSS opacity transition of `.slide`. */
const FADE_MS = 1200;
const QR_KEY = "slideshow.qr";
const HIGHLIGHTS_KEY = "slideshow.highlights";

interface Layer {
  slide: ShownSlide;
  ready: boolean;
}

/**
 * The venue screen: photos and videos full screen with cross-fades, new uploads first and marked,
 * an optional join QR, and an offline mark while the network is gone. At most two slides are in
 * the DOM (the one on screen and the one fading in), so hours of running do not grow the page.
 */
export function SlideshowPage() {
  useStore(lang);
  const live = useStore(connected);
  const pub = useStore(publicEvent);
  const [layers, setLayers] = useState<Layer[]>([]);
  const [online, setOnline] = useState(navigator.onLine);
  const [wasLive, setWasLive] = useState(false);
  const [showQr, setShowQr] = useState(() => localStorage.getItem(QR_KEY) === "1");
  const [full, setFull] = useState(false);
  // Issue 27: the venue screen may show only the hosts' highlights (remembered).
  const [highlightsOnly, setHighlightsOnly] = useState(() => localStorage.getItem(HIGHLIGHTS_KEY) === "1");
  const ctl = useRef<SlideshowController | null>(null);
  const root = useRef<HTMLDivElement>(null);
  const link = joinUrl(pub);
  const qr = useQrDataUrl(link, 400);

  useEffect(() => {
    const c = new SlideshowController(
      {
        feed: () => api<FeedPage>("GET", `/feed?limit=100${highlightsOnly ? "&highlights=1" : ""}`),
        delta: async (cursor) => {
          const d = await api<Delta>("GET", `/feed/delta?limit=100&cursor=${encodeURIComponent(cursor)}`);
          if (!highlightsOnly) return d;
          // Only highlights; one whose highlight was taken back leaves the rotation.
          const gone = [...d.items, ...d.changes].filter((i) => !i.highlight).map((i) => i.id);
          return {
            ...d,
            items: d.items.filter((i) => i.highlight),
            changes: d.changes.filter((i) => i.highlight),
            removed_ids: [...d.removed_ids, ...gone],
          };
        },
      },
      browserTimers,
      // The slide on screen stays until the next one has loaded; a next one that never loaded is
      // replaced, so there are never more than two.
      (slide) =>
        setLayers((cur) => (slide ? [...cur.filter((l) => l.ready).slice(-1), { slide, ready: false }] : [])),
      CAPACITY,
    );
    ctl.current = c;
    const off = onLive((event, data) => {
      c.onEvent(event, data);
      // A photo just marked as a highlight is not in the rotation yet: read the list again.
      if (highlightsOnly && event === "upload-updated" && data.highlight === true) c.refresh();
    });
    c.start();
    const net = () => setOnline(navigator.onLine);
    const fs = () => setFull(document.fullscreenElement !== null);
    addEventListener("online", net);
    addEventListener("offline", net);
    document.addEventListener("fullscreenchange", fs);
    // A venue screen must not go to sleep (where the browser offers a wake lock).
    let lock: { release(): Promise<void> } | null = null;
    const wake = () => {
      const wl = (
        navigator as { wakeLock?: { request(type: "screen"): Promise<{ release(): Promise<void> }> } }
      ).wakeLock;
      if (document.visibilityState === "visible" && wl)
        wl.request("screen").then(
          (l) => {
            lock = l;
          },
          () => {},
        );
    };
    wake();
    document.addEventListener("visibilitychange", wake);
    return () => {
      off();
      c.stop();
      ctl.current = null;
      removeEventListener("online", net);
      removeEventListener("offline", net);
      document.removeEventListener("fullscreenchange", fs);
      document.removeEventListener("visibilitychange", wake);
      lock?.release().catch(() => {});
    };
  }, [highlightsOnly]);

  useEffect(() => {
    if (live) setWasLive(true);
  }, [live]);

  const ready = (seq: number) => {
    ctl.current?.loaded(seq);
    setLayers((cur) => cur.map((l) => (l.slide.seq === seq ? { ...l, ready: true } : l)));
    // Once the new slide has faded in, the one below it leaves the DOM.
    setTimeout(() => setLayers((cur) => cur.filter((l) => l.slide.seq >= seq)), FADE_MS + 100);
  };
  const failed = (seq: number) => {
    setLayers((cur) => cur.filter((l) => l.slide.seq !== seq));
    ctl.current?.failed(seq);
  };
  const ended = (seq: number) => ctl.current?.ended(seq);

  const toggleFull = () => {
    if (document.fullscreenElement) document.exitFullscreen().catch(() => {});
    else root.current?.requestFullscreen?.().catch(() => {});
  };
  const toggleQr = () => {
    localStorage.setItem(QR_KEY, showQr ? "0" : "1");
    setShowQr(!showQr);
  };
  const offline = !online || (wasLive && !live);
  const c = ctl.current;

  return (
    <div
      class={`slideshow ${full ? "is-full" : ""} ${showQr && qr ? "qr-on" : ""}`}
      ref={root}
      data-queue={c?.queue.size ?? 0}
      data-awaiting={c?.awaitingCount ?? 0}
    >
      {layers.map((l) => (
        <SlideView key={l.slide.seq} layer={l} onReady={ready} onFailed={failed} onEnded={ended} />
      ))}
      {layers.length === 0 && <p class="empty">{t("slideshow_waiting")}</p>}
      {offline && (
        <p class="offline-mark" role="status" data-testid="offline">
          <span class="dot" aria-hidden="true" /> {t("slideshow_offline")}
        </p>
      )}
      {showQr && qr && (
        <aside class="join-qr" data-testid="join-qr" aria-label={t("card_scan")}>
          <img src={qr} alt={link} />
          <p>
            {t("card_scan")}
            <br />
            <strong>{link.replace(/^https?:\/\//, "")}</strong>
          </p>
        </aside>
      )}
      <div class="controls">
        <button type="button" data-testid="qr-toggle" onClick={toggleQr}>
          {showQr ? t("slideshow_qr_hide") : t("slideshow_qr")}
        </button>
        <button
          type="button"
          data-testid="highlights-toggle"
          aria-pressed={highlightsOnly}
          onClick={() => {
            localStorage.setItem(HIGHLIGHTS_KEY, highlightsOnly ? "0" : "1");
            setHighlightsOnly(!highlightsOnly);
          }}
        >
          {highlightsOnly ? t("slideshow_all") : t("slideshow_highlights")}
        </button>
        <button type="button" data-testid="fullscreen" onClick={toggleFull}>
          {full ? t("exit_fullscreen") : t("fullscreen")}
        </button>
        <button type="button" onClick={() => navigate("/")}>
          {t("close")}
        </button>
      </div>
    </div>
  );
}

function SlideView({
  layer,
  onReady,
  onFailed,
  onEnded,
}: {
  layer: Layer;
  onReady: (seq: number) => void;
  onFailed: (seq: number) => void;
  onEnded: (seq: number) => void;
}) {
  const { item, isNew, seq } = layer.slide;
  const video = useRef<HTMLVideoElement>(null);
  // A removed <video> can keep its decoder and buffers until collected: let go of them at once.
  useEffect(
    () => () => {
      const v = video.current;
      if (!v) return;
      v.pause();
      v.removeAttribute("src");
      v.load();
    },
    [],
  );
  return (
    <figure class={`slide ${layer.ready ? "in" : ""}`} data-seq={seq} data-id={item.id}>
      {item.media_type === "video" ? (
        <video
          ref={video}
          src={item.original_url ?? undefined}
          poster={item.thumbnail_url ?? undefined}
          muted
          autoPlay
          playsInline
          onLoadedData={() => onReady(seq)}
          onEnded={() => onEnded(seq)}
          onError={() => onFailed(seq)}
        />
      ) : (
        <img
          src={(item.display_url ?? item.preview_url) as string}
          alt={item.caption || item.uploader.display_name}
          onLoad={() => onReady(seq)}
          onError={() => onFailed(seq)}
        />
      )}
      {isNew && (
        <span class="new-mark" data-testid="new-mark">
          {t("slideshow_new")}
        </span>
      )}
      <figcaption>
        <b>{item.uploader.display_name}</b>
        {item.caption && <span class="cap"> {item.caption}</span>}
      </figcaption>
    </figure>
  );
}
