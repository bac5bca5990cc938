import { useState } from "preact/hooks";
import { type App, api, type Domain, type Page } from "../api.js";
import { useApps } from "../context.js";
import { Link, navigate } from "../router.js";
import { ConfirmButton, Empty, ErrorNote, Field, Loading, Section, useAction, useResource } from "../ui.js";

const SLUG_HINT = "Lowercase letters, digits and -, 2 to 63 characters.";

export function AppsPage() {
  const apps = useApps();
  const [slug, setSlug] = useState("");
  const [name, setName] = useState("");
  const create = useAction();
  return (
    <>
      <Section title="Apps">
        <Loading resource={apps} />
        {apps.data && apps.data.items.length === 0 && <Empty>No apps yet.</Empty>}
        <ul class="list">
          {apps.data?.items.map((a) => (
            <li key={a.id}>
              <Link href={`/apps/${a.id}/scripts`}>
                <strong>{a.name}</strong> <span class="muted">{a.slug}</span>
              </Link>
              <Link href={`/apps/${a.id}`} class="small">
                settings
              </Link>
            </li>
          ))}
        </ul>
      </Section>
      <Section title="New app">
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
          <Field label="Slug" hint={SLUG_HINT}>
            <input name="slug" required value={slug} onInput={(e) => setSlug(e.currentTarget.value)} />
          </Field>
          <Field label="Name (optional)">
            <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
          </Field>
          <ErrorNote error={create.error} />
          <button type="submit" class="primary" disabled={create.busy}>
            Create app
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
        <Section title="Delete app">
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
    <Section title="App">
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
        <p class="muted small">id {app.id}</p>
        <Field label="Name">
          <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </Field>
        <Field label="Slug" hint={SLUG_HINT}>
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
              Check
            </button>
          </div>
        </Field>
        {check && <p class="note">{check}</p>}
        <ErrorNote error={checking.error} />
        <label class="check">
          <input type="checkbox" checked={force} onChange={(e) => setForce(e.currentTarget.checked)} />
          Take the slug over from another app's history (force)
        </label>
        <ErrorNote error={action.error} />
        <button type="submit" class="primary" disabled={action.busy}>
          Save
        </button>
      </form>
    </Section>
  );
}

const SLUG_REASONS: Record<string, string> = {
  free: "The slug is free.",
  current: "This is the app's current slug.",
  own_history: "The slug is free: it is one of this app's former slugs.",
  taken: "Another app uses this slug.",
  in_history: "Another app used this slug and it still redirects there; tick force to take it over.",
  invalid: "Not a valid slug: lowercase letters, digits and -, 2 to 63 characters.",
};

/** The slug:check answer `{slug, available, reason}` in words. */
function describeSlugCheck(r: SlugCheck): string {
  const known = typeof r.reason === "string" ? SLUG_REASONS[r.reason] : undefined;
  if (known) return known;
  return r.available ? "The slug is available." : "The slug is not available.";
}

function DeleteApp({ app, onDeleted }: { app: App; onDeleted: () => void }) {
  const action = useAction();
  return (
    <>
      <p class="muted">Deletes the app with its scripts, routes, triggers and data.</p>
      <ErrorNote error={action.error} />
      <ConfirmButton
        label="Delete app"
        confirm={`Delete app ${app.slug} and everything in it?`}
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
    <Section title="Domains">
      <Loading resource={domains} />
      {domains.data && domains.data.items.length === 0 && <Empty>No domain claims.</Empty>}
      <ul class="list">
        {domains.data?.items.map((d) => (
          <li key={d.id}>
            <code>{d.host}</code>
            <ConfirmButton
              label="Remove"
              confirm={`Remove the claim on ${d.host}?`}
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
          aria-label="Host"
          placeholder="api.example.com or *.example.com"
          required
          value={host}
          onInput={(e) => setHost(e.currentTarget.value)}
        />
        <button type="submit" disabled={add.busy}>
          Add domain
        </button>
      </form>
      <ErrorNote error={add.error} />
    </Section>
  );
}
