import { useContext, useState } from "preact/hooks";
import { type Admin, api, type Page } from "../api.js";
import { AppsContext } from "../context.js";
import { t } from "../i18n.js";
import { ConfirmButton, Empty, ErrorNote, Field, Loading, Section, useAction, useResource } from "../ui.js";

const SCOPES = [
  "app:read",
  "script:read",
  "script:write",
  "app:admin",
  "admin:read",
  "admin:write",
  "instance:admin",
];
const ROLES = ["viewer", "editor", "admin", "owner"];

interface ApiKey {
  id: string;
  name: string;
  scopes: string[];
  app_id: string | null;
  prefix?: string;
  created_at?: string;
  expires_at?: string | null;
  last_used_at?: string | null;
}
type AdminRow = Admin;

/** API keys: create with scopes and an optional app binding (the secret is shown once), revoke. */
export function ApiKeysPage() {
  const keys = useResource(() => api.get<Page<ApiKey>>("api-keys?limit=200"), []);
  const apps = useContext(AppsContext);
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<string[]>(["script:read"]);
  const [appId, setAppId] = useState("");
  const [days, setDays] = useState("");
  const [secret, setSecret] = useState<{ name: string; secret: string } | null>(null);
  const create = useAction();
  const revoke = useAction();
  const appName = (id: string | null) =>
    id ? (apps?.data?.items.find((a) => a.id === id)?.slug ?? id) : t("all_apps_lower");
  return (
    <>
      <Section title={t("new_api_key")}>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            create.run(async () => {
              const body: Record<string, unknown> = { name, scopes };
              if (appId) body.app_id = appId;
              if (days.trim()) body.expires_in_days = Number(days);
              const k = await api.post<ApiKey & { secret: string }>("api-keys", body);
              setSecret({ name: k.name, secret: k.secret });
              setName("");
              keys.reload();
            });
          }}
        >
          <div class="grid">
            <Field label={t("name")}>
              <input name="key_name" required value={name} onInput={(e) => setName(e.currentTarget.value)} />
            </Field>
            <Field label={t("app")} hint={t("key_app_hint")}>
              <select name="key_app" value={appId} onChange={(e) => setAppId(e.currentTarget.value)}>
                <option value="">{t("all_apps_lower")}</option>
                {apps?.data?.items.map((a) => (
                  <option key={a.id} value={a.id}>
                    {a.slug}
                  </option>
                ))}
              </select>
            </Field>
            <Field label={t("expires_in")} hint={t("never_hint")}>
              <input
                name="key_days"
                type="number"
                min="1"
                max="3650"
                value={days}
                onInput={(e) => setDays(e.currentTarget.value)}
              />
            </Field>
          </div>
          <fieldset class="row wrap">
            <legend>{t("scopes")}</legend>
            {SCOPES.map((s) => (
              <label key={s} class="check">
                <input
                  type="checkbox"
                  name={`scope-${s}`}
                  checked={scopes.includes(s)}
                  onChange={(e) =>
                    setScopes(e.currentTarget.checked ? [...scopes, s] : scopes.filter((x) => x !== s))
                  }
                />
                {s}
              </label>
            ))}
          </fieldset>
          <button type="submit" class="primary" disabled={create.busy || scopes.length === 0}>
            {t("create_key")}
          </button>
          <ErrorNote error={create.error} />
        </form>
        {secret && (
          <div class="ok stack" role="status" data-testid="new-key">
            <p>{t("key_created", { name: secret.name })}</p>
            <code class="secret">{secret.secret}</code>
            <button type="button" onClick={() => setSecret(null)}>
              {t("done")}
            </button>
          </div>
        )}
      </Section>
      <Section title={t("api_keys")}>
        <Loading resource={keys} />
        {keys.data && keys.data.items.length === 0 && <Empty>{t("no_api_keys")}</Empty>}
        <ul class="list" data-testid="api-keys">
          {keys.data?.items.map((k) => (
            <li key={k.id} class="row wrap">
              <strong>{k.name}</strong>
              {k.prefix && <code>{k.prefix}…</code>}
              <span class="muted small">
                {k.scopes.join(", ")} · {appName(k.app_id)}
                {k.expires_at ? t("expires_on", { date: k.expires_at.slice(0, 10) }) : ""}
              </span>
              <span class="spacer" />
              <ConfirmButton
                label={t("revoke")}
                confirm={t("revoke_confirm", { name: k.name })}
                disabled={revoke.busy}
                onConfirm={() =>
                  revoke.run(async () => {
                    await api.del(`api-keys/${k.id}`);
                    keys.reload();
                  })
                }
              />
            </li>
          ))}
        </ul>
        <ErrorNote error={revoke.error} />
      </Section>
    </>
  );
}

/** Admin accounts: create, deactivate or reactivate, reset a password. The last admin is protected by the server. */
export function AdminsPage() {
  const admins = useResource(() => api.get<Page<AdminRow>>("admins?limit=200"), []);
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [role, setRole] = useState("member");
  const create = useAction();
  const change = useAction();
  const [note, setNote] = useState<string | null>(null);
  return (
    <>
      <Section title={t("new_admin")}>
        <form
          class="stack"
          onSubmit={(e) => {
            e.preventDefault();
            create.run(async () => {
              await api.post("admins", { username, password, instance_role: role });
              setUsername("");
              setPassword("");
              admins.reload();
            });
          }}
        >
          <div class="grid">
            <Field label={t("username")}>
              <input
                name="admin_username"
                required
                value={username}
                onInput={(e) => setUsername(e.currentTarget.value)}
              />
            </Field>
            <Field label={t("password")}>
              <input
                name="admin_password"
                type="password"
                required
                autocomplete="new-password"
                value={password}
                onInput={(e) => setPassword(e.currentTarget.value)}
              />
            </Field>
            <Field label={t("instance_role")} hint={t("instance_role_hint")}>
              <select name="admin_role" value={role} onChange={(e) => setRole(e.currentTarget.value)}>
                <option value="member">member</option>
                <option value="admin">admin</option>
              </select>
            </Field>
          </div>
          <button type="submit" class="primary" disabled={create.busy}>
            {t("create_account")}
          </button>
          <ErrorNote error={create.error} />
        </form>
      </Section>
      <Section title={t("admin_accounts")}>
        <Loading resource={admins} />
        <ul class="list" data-testid="admins">
          {admins.data?.items.map((a) => (
            <li key={a.id} class="row wrap">
              <strong>{a.username}</strong>
              <span class="muted small">
                {a.instance_role ?? ""} · {a.is_active === false ? t("inactive") : t("active")}
              </span>
              <span class="spacer" />
              <button
                type="button"
                disabled={change.busy}
                onClick={() =>
                  change.run(async () => {
                    await api.patch(`admins/${a.id}`, { is_active: a.is_active === false });
                    admins.reload();
                  })
                }
              >
                {a.is_active === false ? t("reactivate") : t("deactivate")}
              </button>
              <button
                type="button"
                disabled={change.busy}
                onClick={() => {
                  const pw = window.prompt(t("new_password_prompt", { name: a.username }));
                  if (!pw) return;
                  change.run(async () => {
                    await api.patch(`admins/${a.id}`, { password: pw });
                    setNote(t("password_changed", { name: a.username }));
                  });
                }}
              >
                {t("reset_password")}
              </button>
            </li>
          ))}
        </ul>
        {note && <p class="ok">{note}</p>}
        <ErrorNote error={change.error} />
      </Section>
    </>
  );
}

/** An app's members and their roles (owners manage them). */
export function MembersPage({ appId }: { appId: string }) {
  const members = useResource(
    () => api.get<Page<{ admin_id: string; role: string; username?: string }>>(`apps/${appId}/members`),
    [appId],
  );
  const admins = useResource(() => api.get<Page<AdminRow>>("admins?limit=200"), []);
  const [adminId, setAdminId] = useState("");
  const [role, setRole] = useState("viewer");
  const save = useAction();
  const nameOf = (id: string) => admins.data?.items.find((a) => a.id === id)?.username ?? id;
  return (
    <Section title={t("members")}>
      <Loading resource={members} />
      {members.data && members.data.items.length === 0 && <Empty>{t("no_members")}</Empty>}
      <ul class="list" data-testid="members">
        {members.data?.items.map((m) => (
          <li key={m.admin_id} class="row wrap">
            <strong>{m.username ?? nameOf(m.admin_id)}</strong>
            <span class="badge">{m.role}</span>
            <span class="spacer" />
            <ConfirmButton
              label={t("remove")}
              confirm={t("remove_member_confirm", { name: m.username ?? nameOf(m.admin_id) })}
              disabled={save.busy}
              onConfirm={() =>
                save.run(async () => {
                  await api.del(`apps/${appId}/members/${m.admin_id}`);
                  members.reload();
                })
              }
            />
          </li>
        ))}
      </ul>
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          save.run(async () => {
            await api.put(`apps/${appId}/members/${adminId}`, { role });
            members.reload();
          });
        }}
      >
        <select
          aria-label={t("account")}
          required
          value={adminId}
          onChange={(e) => setAdminId(e.currentTarget.value)}
        >
          <option value="">{t("choose_account")}</option>
          {admins.data?.items.map((a) => (
            <option key={a.id} value={a.id}>
              {a.username}
            </option>
          ))}
        </select>
        <select aria-label={t("role")} value={role} onChange={(e) => setRole(e.currentTarget.value)}>
          {ROLES.map((r) => (
            <option key={r}>{r}</option>
          ))}
        </select>
        <button type="submit" disabled={save.busy || !adminId}>
          {t("add_or_change")}
        </button>
      </form>
      <ErrorNote error={save.error} />
      <ErrorNote error={admins.error} />
    </Section>
  );
}
