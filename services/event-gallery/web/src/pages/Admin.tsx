import { useEffect, useState } from "preact/hooks";
import { ApiError, api, formatBytes, session } from "../api.js";
import { me, refreshMe } from "../app-state.js";
import { t } from "../i18n.js";
import { useStore } from "../store.js";

interface Disk {
  free_bytes: number;
  total_bytes: number;
  media_bytes: number;
  originals_bytes: number;
  derivatives_bytes: number;
}

/** Admin: sign in with the password (token kept for this tab only), config, disk and jobs. */
export function AdminPage() {
  const m = useStore(me);
  const [password, setPassword] = useState("");
  const [config, setConfig] = useState<Record<string, unknown> | null>(null);
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [disk, setDisk] = useState<Disk | null>(null);
  const [jobs, setJobs] = useState<unknown>(null);
  const [error, setError] = useState<string | null>(null);
  const isAdmin = m?.user.role === "admin";

  const load = async () => {
    const [c, d, j] = await Promise.all([
      api<{ config: Record<string, unknown> }>("GET", "/admin/config"),
      api<Disk>("GET", "/admin/disk"),
      api<unknown>("GET", "/admin/jobs"),
    ]);
    setConfig(c.config);
    setDraft(Object.fromEntries(Object.entries(c.config).map(([k, v]) => [k, String(v)])));
    setDisk(d);
    setJobs(j);
  };
  useEffect(() => {
    if (isAdmin) load().catch(() => {});
  }, [isAdmin]);

  if (!isAdmin)
    return (
      <main class="narrow card">
        <form
          onSubmit={async (e) => {
            e.preventDefault();
            setError(null);
            try {
              const r = await api<{ token: string }>("POST", "/admin/login", { password });
              session.setAdmin(r.token);
              setPassword("");
              await refreshMe();
            } catch (err) {
              setError(err instanceof ApiError ? err.message : t("error"));
            }
          }}
        >
          <h1>{t("admin_title")}</h1>
          <label>
            {t("password")}
            <input
              type="password"
              value={password}
              required
              onInput={(e) => setPassword(e.currentTarget.value)}
            />
          </label>
          <button type="submit" class="primary">
            {t("sign_in")}
          </button>
          {error && <p class="error">{error}</p>}
        </form>
      </main>
    );

  const save = async () => {
    if (!config) return;
    const patch: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(draft)) {
      if (String(config[k]) === v) continue;
      patch[k] = typeof config[k] === "number" ? Number(v) : v;
    }
    setError(null);
    try {
      const r = await api<{ config: Record<string, unknown> }>("PATCH", "/admin/config", patch);
      setConfig(r.config);
      await refreshMe();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : t("error"));
    }
  };

  return (
    <main class="admin">
      <h1>{t("admin_title")}</h1>
      {error && <p class="error">{error}</p>}
      {config && (
        <section class="card">
          <h2>{t("config")}</h2>
          {Object.keys(config).map((k) => (
            <label key={k}>
              {k}
              <input
                value={draft[k] ?? ""}
                onInput={(e) => setDraft({ ...draft, [k]: e.currentTarget.value })}
              />
            </label>
          ))}
          <button type="button" class="primary" onClick={save}>
            {t("save")}
          </button>
        </section>
      )}
      {disk && (
        <section class="card">
          <h2>{t("disk")}</h2>
          <p>
            {formatBytes(disk.free_bytes)} {t("free")} / {formatBytes(disk.total_bytes)}
          </p>
          <progress max={disk.total_bytes} value={disk.total_bytes - disk.free_bytes} />
          <p class="muted">
            media {formatBytes(disk.media_bytes)} · originals {formatBytes(disk.originals_bytes)} ·
            derivatives {formatBytes(disk.derivatives_bytes)}
          </p>
        </section>
      )}
      {jobs !== null && (
        <section class="card">
          <h2>{t("jobs")}</h2>
          <pre class="jobs">{JSON.stringify(jobs, null, 2)}</pre>
        </section>
      )}
    </main>
  );
}
