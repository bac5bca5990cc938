import { useEffect, useState } from "preact/hooks";
import { api, type GuestbookPage } from "../api.js";
import { me } from "../app-state.js";
import { lang, t } from "../i18n.js";
import { onLive } from "../live.js";
import { useStore } from "../store.js";
import { FeedPage } from "./Feed.js";
import { GuestbookPanel } from "./Guestbook.js";

type Tab = "photos" | "guestbook";
const tabOf = (): Tab => (location.hash === "#guestbook" ? "guestbook" : "photos");

/**
 * The guest's main page: photos and, when the event has one, the guestbook (issue 27). The tab is
 * kept in the address hash, so a reload or a shared link opens the same tab.
 */
export function GalleryTabs() {
  const m = useStore(me);
  useStore(lang);
  const [tab, setTab] = useState<Tab>(tabOf);
  useEffect(() => {
    const onHash = () => setTab(tabOf());
    addEventListener("hashchange", onHash);
    return () => removeEventListener("hashchange", onHash);
  }, []);
  const enabled = !!m?.event.guestbook_enabled;
  const isHost = !!m && m.user.role !== "guest";
  // Hosts see on the tab how many guestbook messages wait for approval (from the newest 100).
  const [waiting, setWaiting] = useState(0);
  useEffect(() => {
    if (!isHost) return;
    let timer: ReturnType<typeof setTimeout> | null = null;
    const count = () =>
      api<GuestbookPage>("GET", "/guestbook?limit=100")
        .then((p) => setWaiting(p.items.filter((i) => i.approval === "pending").length))
        .catch(() => {});
    count();
    return onLive((event) => {
      if (!["guestbook-entry", "guestbook-removed", "user-hidden", "reconnected"].includes(event)) return;
      if (timer) clearTimeout(timer);
      timer = setTimeout(count, 300);
    });
  }, [isHost]);
  const show: Tab = enabled ? tab : "photos";
  const pick = (next: Tab) => {
    history.replaceState(null, "", next === "guestbook" ? "#guestbook" : location.pathname + location.search);
    setTab(next);
  };
  return (
    <>
      {m?.event.upload_only && m.user.role === "guest" && (
        <p class="notice upload-only" data-testid="upload-only">
          {t("upload_only_notice")}
        </p>
      )}
      {enabled && (
        <div class="tabs" role="tablist" aria-label={t("menu")}>
          {(["photos", "guestbook"] as const).map((id) => (
            <button
              key={id}
              type="button"
              role="tab"
              class={`tab ${show === id ? "on" : ""}`}
              aria-selected={show === id}
              data-testid={`tab-${id}`}
              onClick={() => pick(id)}
            >
              {id === "photos" ? t("tab_photos") : t("guestbook")}
              {id === "guestbook" && waiting > 0 && (
                <span class="badge-count" data-testid="gb-waiting" title={t("pending")}>
                  {waiting}
                </span>
              )}
            </button>
          ))}
        </div>
      )}
      {show === "guestbook" ? (
        <main class="feed">
          <GuestbookPanel />
        </main>
      ) : (
        <FeedPage />
      )}
    </>
  );
}
