import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { type Admin, ApiError, type App, api, logout, onUnauthorized, type Page } from "./api.js";
import { AppsContext } from "./context.js";
import { type Key, lang, switchLanguage, t } from "./i18n.js";
import { Link, match, navigate, usePath } from "./router.js";
import { ErrorNote, useResource } from "./ui.js";
import { AdminsPage, ApiKeysPage, MembersPage } from "./views/access.js";
import { AppSettings, AppsPage } from "./views/apps.js";
import { DataPage } from "./views/data.js";
import { DeadLettersPage } from "./views/dead-letters.js";
import { ExecutionsPage } from "./views/executions.js";
import { LoginPage } from "./views/login.js";
import { ScriptEditorPage } from "./views/script-editor.js";
import { ScriptsPage } from "./views/scripts.js";
import { SdkPage } from "./views/sdk.js";
import { SecretsPage } from "./views/secrets.js";
import { TopicsPage } from "./views/topics.js";
import { TriggersPage } from "./views/triggers.js";

type Session = { state: "checking" } | { state: "out" } | { state: "in"; admin: Admin };

export function Root() {
  const [session, setSession] = useState<Session>({ state: "checking" });
  const [checkError, setCheckError] = useState<unknown>(null);

  const check = () => {
    setCheckError(null);
    api.get<{ admin: Admin }>("me").then(
      (r) => setSession({ state: "in", admin: r.admin }),
      (err) => {
        if (err instanceof ApiError && err.status === 401) setSession({ state: "out" });
        else setCheckError(err);
      },
    );
  };
  useEffect(check, []);
  useEffect(() => onUnauthorized(() => setSession({ state: "out" })), []);

  if (checkError) {
    return (
      <main class="narrow">
        <ErrorNote error={checkError} />
        <button type="button" onClick={check}>
          Retry
        </button>
      </main>
    );
  }
  if (session.state === "checking") return <p class="muted center">{t("loading")}</p>;
  if (session.state === "out") return <LoginPage onLogin={(admin) => setSession({ state: "in", admin })} />;
  return <Shell admin={session.admin} onLogout={() => setSession({ state: "out" })} />;
}

const APP_SECTIONS: Array<[string, Key]> = [
  ["", "sec_settings"],
  ["/scripts", "sec_scripts"],
  ["/triggers", "sec_triggers"],
  ["/executions", "sec_executions"],
  ["/dead-letters", "sec_dead_letters"],
  ["/secrets", "sec_secrets"],
  ["/topics", "sec_topics"],
  ["/data", "sec_data"],
  ["/members", "sec_members"],
];

function Shell({ admin, onLogout }: { admin: Admin; onLogout: () => void }) {
  const path = usePath();
  const apps = useResource(() => api.get<Page<App>>("apps?limit=200"), []);
  const appId = /^\/apps\/([^/]+)/.exec(path)?.[1];
  const current = apps.data?.items.find((a) => a.id === appId);

  return (
    <AppsContext.Provider value={apps}>
      <header class="topbar">
        <Link href="/" class="brand">
          {t("brand")}
        </Link>
        <select
          aria-label={t("app")}
          value={appId ?? ""}
          onChange={(e) => {
            const id = e.currentTarget.value;
            navigate(id ? `/apps/${id}/scripts` : "/");
          }}
        >
          <option value="">{t("all_apps")}</option>
          {apps.data?.items.map((a) => (
            <option key={a.id} value={a.id}>
              {a.name} ({a.slug})
            </option>
          ))}
        </select>
        <span class="spacer" />
        <Link href="/sdk">SDK</Link>
        <Link href="/keys">{t("keys")}</Link>
        <Link href="/admins">{t("admins")}</Link>
        <span class="muted who">{admin.username}</span>
        <button
          type="button"
          onClick={() => {
            logout().finally(onLogout);
          }}
        >
          {t("logout")}
        </button>
        <button
          type="button"
          class="lang"
          lang={lang === "de" ? "en" : "de"}
          aria-label={t("switch_language_label")}
          onClick={switchLanguage}
        >
          {t("switch_language")}
        </button>
      </header>
      {appId && (
        <nav class="tabs" aria-label={t("app_sections")}>
          {APP_SECTIONS.map(([suffix, label]) => {
            const href = `/apps/${appId}${suffix}`;
            const active = suffix === "" ? path === href : path.startsWith(href);
            return (
              <Link key={suffix} href={href} class={active ? "active" : undefined}>
                {t(label)}
              </Link>
            );
          })}
        </nav>
      )}
      <main>
        {appId && <p class="crumb muted">{current ? `${current.name} · ${current.slug}` : ""}</p>}
        <CurrentPage path={path} />
      </main>
    </AppsContext.Provider>
  );
}

type P = Record<string, string>;
const PAGES: Array<[string, (p: P) => JSX.Element]> = [
  ["/", () => <AppsPage />],
  ["/apps", () => <AppsPage />],
  ["/sdk", () => <SdkPage />],
  ["/keys", () => <ApiKeysPage />],
  ["/admins", () => <AdminsPage />],
  ["/apps/:app/members", (p) => <MembersPage appId={p.app!} />],
  ["/apps/:app/data", (p) => <DataPage appId={p.app!} />],
  ["/apps/:app", (p) => <AppSettings appId={p.app!} />],
  ["/apps/:app/scripts", (p) => <ScriptsPage appId={p.app!} />],
  ["/apps/:app/scripts/new", (p) => <ScriptEditorPage appId={p.app!} scriptId={null} />],
  ["/apps/:app/scripts/:id", (p) => <ScriptEditorPage key={p.id} appId={p.app!} scriptId={p.id!} />],
  ["/apps/:app/triggers", (p) => <TriggersPage appId={p.app!} />],
  ["/apps/:app/executions", (p) => <ExecutionsPage appId={p.app!} />],
  ["/apps/:app/dead-letters", (p) => <DeadLettersPage appId={p.app!} />],
  ["/apps/:app/secrets", (p) => <SecretsPage appId={p.app!} />],
  ["/apps/:app/topics", (p) => <TopicsPage appId={p.app!} />],
];

function CurrentPage({ path }: { path: string }) {
  for (const [pattern, render] of PAGES) {
    const params = match(pattern, path);
    if (params) return render(params);
  }
  return (
    <p>
      {t("no_page")} <Link href="/">{t("back_to_apps")}</Link>
    </p>
  );
}
