import { useState } from "preact/hooks";
import { type App, api, type Domain, type Page } from "../api.js";
import { useApps } from "../context.js";
import { type Key, t } from "../i18n.js";
import { Link, navigate } from "../router.js";
import { ConfirmButton, Empty, ErrorNote, Field, Loading, Section, useAction, useResource } from "../ui.js";

export function AppsPage() {
  const apps = useApps();
  const [slug, setSlug] = useState("");
  const [name, setName] = useState("");
  const create = useAction();
  return (
    <>
      <Section title={t("apps")}>
        <Loading resource={apps} />
        {apps.data && apps.data.items.length === 0 && <Empty>{t("no_apps")}</Empty>}
        <ul class="list">
          {apps.data?.items.map((a) => (
            <li key={a.id}>
              <Link href={`/apps/${a.id}/scripts`}>
                <strong>{a.name}</strong> <span class="muted">{a.slug}</span>
              </Link>
              <Link href={`/apps/${a.id}`} class="small">
                {t("settings_link")}
              </Link>
            </li>
          ))}
        </ul>
      </Section>
      <Section title={t("new_app")}>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            create.run(async () => {
              const app = await api.post<App>("apps", name ? { slug, name } : { slug });
              setSlug("");
              setName("");
              apps.reload();
              navigate(`/apps/${app.id}`);
            });
          }}
        >
          <Field label={t("slug")} hint={t("slug_hint")}>
            <input name="slug" required value={slug} onInput={(e) => setSlug(e.currentTarget.value)} />
          </Field>
          <Field label={t("name_optional")}>
            <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <ErrorNote error={create.error} />
          <button type="submit" class="primary" disabled={create.busy}>
            {t("create_app")}
          </button>
        </form>
      </Section>
    </>
  );
}

interface SlugCheck {
  slug: string;
  available: boolean;
  reason?: string;
  force_allowed?: boolean;
}

export function AppSettings({ appId }: { appId: string }) {
  const apps = useApps();
  const app = useResource(() => api.get<App>(`apps/${appId}`), [appId]);
  return (
    <>
      <Loading resource={app} />
      {app.data && (
        <Rename
          key={app.data.id + app.data.slug + app.data.name}
          app={app.data}
          onSaved={() => {
            app.reload();
            apps.reload();
          }}
        />
      )}
      <Domains appId={appId} />
      {app.data && (
        <Section title={t("delete_app")}>
          <DeleteApp app={app.data} onDeleted={apps.reload} />
        </Section>
      )}
    </>
  );
}

function Rename({ app, onSaved }: { app: App; onSaved: () => void }) {
  const [slug, setSlug] = useState(app.slug);
  const [name, setName] = useState(app.name);
  const [check, setCheck] = useState<string | null>(null);
  const [force, setForce] = useState(false);
  const action = useAction();
  const checking = useAction();
  return (
    <Section title={t("app")}>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          action.run(async () => {
            const body: Record<string, unknown> = {};
            if (name !== app.name) body.name = name;
            if (slug !== app.slug) body.slug = slug;
            if (force) body.force = true;
            await api.patch<App>(`apps/${app.id}`, body);
            setCheck(null);
            onSaved();
          });
        }}
      >
        <p class="muted small">{t("id_n", { id: app.id })}</p>
        <Field label={t("name")}>
          <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label={t("slug")} hint={t("slug_hint")}>
          <div class="row">
            <input
              name="slug"
              value={slug}
              onInput={(e) => {
                setSlug(e.currentTarget.value);
                setCheck(null);
              }}
            />
            <button
              type="button"
              disabled={checking.busy || slug === app.slug}
              onClick={() =>
                checking.run(async () => {
                  const r = await api.post<SlugCheck>(`apps/${app.id}/slug:check`, { slug });
                  setCheck(describeSlugCheck(r));
                })
              }
            >
              {t("check")}
            </button>
          </div>
        </Field>
        {check && <p class="note">{check}</p>}
        <ErrorNote error={checking.error} />
        <label class="check">
          <input type="checkbox" checked={force} onChange={(e) => setForce(e.currentTarget.checked)} />
          {t("slug_force")}
        </label>
        <ErrorNote error={action.error} />
        <button type="submit" class="primary" disabled={action.busy}>
          {t("save")}
        </button>
      </form>
    </Section>
  );
}

const SLUG_REASONS: Record<string, Key> = {
  free: "slug_free",
  current: "slug_current",
  own_history: "slug_own_history",
  taken: "slug_taken",
  in_history: "slug_in_history",
  invalid: "slug_invalid",
};

/** The slug:check answer `{slug, available, reason}` in words. */
function describeSlugCheck(r: SlugCheck): string {
  const known = typeof r.reason === "string" ? SLUG_REASONS[r.reason] : undefined;
  if (known) return t(known);
  return r.available ? t("slug_available") : t("slug_unavailable");
}

function DeleteApp({ app, onDeleted }: { app: App; onDeleted: () => void }) {
  const action = useAction();
  return (
    <>
      <p class="muted">{t("delete_app_note")}</p>
      <ErrorNote error={action.error} />
      <ConfirmButton
        label={t("delete_app")}
        confirm={t("delete_app_confirm", { slug: app.slug })}
        disabled={action.busy}
        onConfirm={() =>
          action.run(async () => {
            await api.del(`apps/${app.id}`);
            onDeleted();
            navigate("/");
          })
        }
      />
    </>
  );
}

function Domains({ appId }: { appId: string }) {
  const domains = useResource(() => api.get<Page<Domain>>(`apps/${appId}/domains`), [appId]);
  const [host, setHost] = useState("");
  const add = useAction();
  const remove = useAction();
  return (
    <Section title={t("domains")}>
      <Loading resource={domains} />
      {domains.data && domains.data.items.length === 0 && <Empty>{t("no_domains")}</Empty>}
      <ul class="list">
        {domains.data?.items.map((d) => (
          <li key={d.id}>
            <code>{d.host}</code>
            <ConfirmButton
              label={t("remove")}
              confirm={t("remove_domain_confirm", { host: d.host })}
              disabled={remove.busy}
              onConfirm={() =>
                remove.run(async () => {
                  await api.del(`apps/${appId}/domains/${d.id}`);
                  domains.reload();
                })
              }
            />
          </li>
        ))}
      </ul>
      <ErrorNote error={remove.error} />
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          add.run(async () => {
            await api.post(`apps/${appId}/domains`, { host });
            setHost("");
            domains.reload();
          });
        }}
      >
        <input
          name="host"
          class="grow"
          aria-label={t("host")}
          placeholder={t("host_placeholder")}
          required
          value={host}
          onInput={(e) => setHost(e.currentTarget.value)}
        />
        <button type="submit" disabled={add.busy}>
          {t("add_domain")}
        </button>
      </form>
      <ErrorNote error={add.error} />
    </Section>
  );
}
