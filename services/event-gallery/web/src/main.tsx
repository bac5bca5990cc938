import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { AppRoute } from "../../src/http/app-routes.js";
import { api, session } from "./api.js";
import { me, navigate, refreshMe, route } from "./app-state.js";
import { eventName, loadPublicEvent, publicEvent } from "./branding.js";
import { lang, setLang, t } from "./i18n.js";
import { connected, onLive, startLive, stopLive } from "./live.js";
import { AdminPage } from "./pages/Admin.js";
import { GalleryTabs } from "./pages/GalleryTabs.js";
import { HostPage } from "./pages/Host.js";
import { JoinPage } from "./pages/Join.js";
import { QrCardPage } from "./pages/QrCard.js";
import { SlideshowPage } from "./pages/Slideshow.js";
import { restoreQueue, resumeLocked } from "./queue.js";
import { useStore } from "./store.js";
import "./styles.css";
import "./live-event.css";

function Header() {
  const m = useStore(me);
  const live = useStore(connected);
  const pub = useStore(publicEvent);
  useStore(lang);
  const role = m?.user.role;
  // Narrow screens (CSS below 560 px) fold the page links into a menu so that every one stays
  // reachable at 360 px in both languages; wider screens show them inline and hide the button.
  const [menu, setMenu] = useState(false);
  useEffect(() => {
    if (!menu) return;
    const onKey = (e: KeyboardEvent) => e.key === "Escape" && setMenu(false);
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [menu]);
  const link = (path: AppRoute, label: string) => (
    <a
      href={path}
      class={location.pathname === path ? "active" : ""}
      aria-current={location.pathname === path ? "page" : undefined}
      onClick={(e) => {
        e.preventDefault();
        setMenu(false);
        navigate(path);
      }}
    >
      {label}
    </a>
  );
  return (
    <header class="top">
      <strong class="brand" title={m ? eventName(m.event.name) : t("app_title")}>
        {m ? eventName(m.event.name) : pub ? eventName(pub.name) : t("app_title")}
      </strong>
      {m && (
        <button
          type="button"
          class="link menu-btn"
          aria-expanded={menu}
          aria-controls="main-nav"
          data-testid="menu"
          onClick={() => setMenu(!menu)}
        >
          <svg aria-hidden="true" viewBox="0 0 24 24" width="22" height="22">
            <path d="M4 7h16M4 12h16M4 17h16" fill="none" stroke="currentColor" stroke-width="2" />
          </svg>
          <span class="vh">{t("menu")}</span>
        </button>
      )}
      <nav id="main-nav" class={menu ? "open" : ""} aria-label={t("menu")}>
        {m && link("/", t("feed"))}
        {m && link("/slideshow", t("slideshow"))}
        {(role === "host" || role === "admin") && link("/host", t("host"))}
        {role === "admin" && link("/admin", t("admin"))}
      </nav>
      <span class={`dot ${live ? "on" : ""}`} title={live ? t("live") : t("offline")} />
      <button
        type="button"
        class="link lang"
        lang={lang.value === "de" ? "en" : "de"}
        aria-label={`${lang.value === "de" ? "EN" : "DE"}: ${t("language")}`}
        title={t("language")}
        onClick={() => setLang(lang.value === "de" ? "en" : "de")}
      >
        {lang.value === "de" ? "EN" : "DE"}
      </button>
      {m && (
        <button
          type="button"
          class="link logout"
          aria-label={t("logout")}
          title={t("logout")}
          onClick={async () => {
            await api("DELETE", "/session").catch(() => {});
            session.clear();
            stopLive();
            me.set(null);
            navigate("/join");
          }}
        >
          <span class="txt">{t("logout")}</span>
          <svg class="ico" aria-hidden="true" viewBox="0 0 24 24" width="22" height="22">
            <path
              d="M10 4H5v16h5M15 8l4 4-4 4M19 12H9"
              fill="none"
              stroke="currentColor"
              stroke-width="2"
              stroke-linecap="round"
              stroke-linejoin="round"
            />
          </svg>
        </button>
      )}
    </header>
  );
}

function App() {
  const path = useStore(route);
  const m = useStore(me);
  useStore(lang);
  const [loaded, setLoaded] = useState(false);

  useEffect(() => {
    loadPublicEvent();
    refreshMe()
      .catch(() => null)
      .finally(() => setLoaded(true));
    return onLive((event) => {
      if (event === "event-opened") resumeLocked();
      if (
        [
          "event-opened",
          "event-closed",
          "export-ready",
          "export-invalidated",
          "user-hidden",
          "user-unhidden",
          "reconnected",
        ].includes(event)
      )
        refreshMe().catch(() => {});
    });
  }, []);

  useEffect(() => {
    if (!m) return;
    startLive();
    restoreQueue(() => {}).catch(() => {});
  }, [m?.user.id]);

  if (!loaded) return null;
  if (path === "/admin")
    return (
      <>
        <Header />
        <AdminPage />
      </>
    );
  if (!m)
    return (
      <>
        <Header />
        <JoinPage />
      </>
    );
  if (path === "/slideshow") return <SlideshowPage />;
  if (path === "/host/card") return <QrCardPage />;
  return (
    <>
      <Header />
      {path === "/host" ? <HostPage /> : <GalleryTabs />}
    </>
  );
}

document.documentElement.lang = lang.value;
render(<App />, document.getElementById("app")!);
