import { useEffect, useState } from "preact/hooks";
import { ApiError, api, type FailedUpload, formatBytes, session } from "../api.js";
import { me, refreshMe } from "../app-state.js";
import { loadPublicEvent, publicEvent } from "../branding.js";
import { type Key, lang, t, tf } from "../i18n.js";
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
  const [error, setError] = useState<string | null>(null);
  const isAdmin = m?.user.role === "admin";

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

  return <AdminConsole onError={setError} error={error} />;
}

type Kind = "text" | "textarea" | "number" | "int" | "bool" | "color" | "url" | "mb";
const FIELDS: { key: string; kind: Kind }[] = [
  { key: "event_name", kind: "text" },
  { key: "welcome_text_en", kind: "textarea" },
  { key: "welcome_text_de", kind: "textarea" },
  { key: "accent_color", kind: "color" },
  { key: "public_url", kind: "url" },
  { key: "premoderation", kind: "bool" },
  { key: "upload_only", kind: "bool" },
  { key: "guestbook_enabled", kind: "bool" },
  { key: "guestbook_voice", kind: "bool" },
  { key: "max_upload_bytes", kind: "mb" },
  { key: "quota_tolerance", kind: "number" },
  { key: "upload_rate_per_hour", kind: "int" },
  { key: "join_ip_rate_per_min", kind: "int" },
  { key: "recover_ip_rate_per_min", kind: "int" },
  { key: "feed_rate_per_min", kind: "int" },
  { key: "delta_rate_per_min", kind: "int" },
  { key: "export_downloads_per_day", kind: "int" },
];
const MB = 1024 * 1024;

const toDraft = (kind: Kind, v: unknown): string =>
  kind === "mb" ? String(Math.floor(Number(v) / MB)) : v === null || v === undefined ? "" : String(v);

/** Parse one field; a string is a validation message (shown under the field). */
function parseField(kind: Kind, raw: string): { value: unknown } | string {
  const v = raw.trim();
  switch (kind) {
    case "bool":
      return { value: raw === "true" };
    case "number":
    case "int":
    case "mb": {
      const n = Number(v);
      if (v === "" || !Number.isFinite(n) || (kind !== "number" && !Number.isInteger(n)))
        return t("invalid_number");
      return { value: kind === "mb" ? n * MB : n };
    }
    case "color":
      return /^#[0-9a-fA-F]{6}$/.test(v) ? { value: v } : t("invalid_color");
    case "url":
      if (v === "") return { value: null };
      return /^https?:\/\/[^\s/]+/.test(v) ? { value: v } : t("invalid_url");
    default:
      return { value: v };
  }
}

interface JobRow {
  id: string;
  kind: string;
  status: string;
  progress_pct: number;
  message: string | null;
  updated_at: string;
}
interface Jobs {
  export_jobs: JobRow[];
  derivative_backlog: number;
  failed_uploads: number;
}

function AdminConsole({ error, onError }: { error: string | null; onError: (e: string | null) => void }) {
  const [config, setConfig] = useState<Record<string, unknown> | null>(null);
  const [draft, setDraft] = useState<Record<string, string>>({});
  const [invalid, setInvalid] = useState<Record<string, string>>({});
  const [saved, setSaved] = useState(false);
  const [disk, setDisk] = useState<Disk | null>(null);
  const [jobs, setJobs] = useState<Jobs | null>(null);
  const [failed, setFailed] = useState<FailedUploads | null>(null);
  const pub = useStore(publicEvent);
  useStore(lang);

  const fill = (c: Record<string, unknown>) => {
    setConfig(c);
    setDraft(Object.fromEntries(FIELDS.map((f) => [f.key, toDraft(f.kind, c[f.key])])));
  };
  const load = async () => {
    const [c, d, j, f] = await Promise.all([
      api<{ config: Record<string, unknown> }>("GET", "/admin/config"),
      api<Disk>("GET", "/admin/disk"),
      api<Jobs>("GET", "/admin/jobs"),
      api<FailedUploads>("GET", "/admin/failed-uploads"),
    ]);
    fill(c.config);
    setDisk(d);
    setJobs(j);
    setFailed(f);
  };
  useEffect(() => {
    load().catch(() => {});
  }, []);

  const guard = async (fn: () => Promise<unknown>) => {
    onError(null);
    try {
      await fn();
    } catch (err) {
      onError(err instanceof ApiError ? err.message : t("error"));
    }
  };

  const save = async () => {
    if (!config) return;
    const patch: Record<string, unknown> = {};
    const bad: Record<string, string> = {};
    for (const f of FIELDS) {
      const raw = draft[f.key] ?? "";
      if (raw === toDraft(f.kind, config[f.key])) continue;
      const parsed = parseField(f.kind, raw);
      if (typeof parsed === "string") bad[f.key] = parsed;
      else patch[f.key] = parsed.value;
    }
    setInvalid(bad);
    setSaved(false);
    if (Object.keys(bad).length > 0 || Object.keys(patch).length === 0) return;
    await guard(async () => {
      try {
        const r = await api<{ config: Record<string, unknown> }>("PATCH", "/admin/config", patch);
        fill(r.config);
        setSaved(true);
        await Promise.all([refreshMe(), loadPublicEvent()]);
      } catch (err) {
        // The server names the field it refused: show the message there.
        const field = err instanceof ApiError ? (err.body.field as string | undefined) : undefined;
        if (field && err instanceof ApiError) setInvalid({ [field]: err.message });
        else throw err;
      }
    });
  };

  const uploadCover = (file: File) =>
    guard(async () => {
      const fd = new FormData();
      fd.append("file", file);
      const res = await fetch("/api/v1/admin/cover", {
        method: "PUT",
        headers: { authorization: `Bearer ${session.token()}` },
        body: fd,
      });
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as { error?: { code?: string; message?: string } };
        throw new ApiError(res.status, body.error?.code ?? "error", body.error?.message ?? t("error"));
      }
      await loadPublicEvent();
    });

  const used = disk ? disk.total_bytes - disk.free_bytes : 0;
  const failedJobs = jobs?.export_jobs.some((j) => j.status === "failed") ?? false;

  return (
    <main class="admin">
      <h1>{t("admin_title")}</h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {config && (
        <form
          class="card config"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            save();
          }}
        >
          <h2>{t("config")}</h2>
          {FIELDS.map((f) => {
            const id = `cfg-${f.key}`;
            const help = `${id}-help`;
            const err = invalid[f.key];
            const common = {
              id,
              name: f.key,
              "aria-describedby": err ? `${help} ${id}-err` : help,
              "aria-invalid": err ? ("true" as const) : undefined,
            };
            const set = (v: string) => setDraft({ ...draft, [f.key]: v });
            return (
              <div class={`field ${err ? "invalid" : ""}`} key={f.key}>
                {f.kind === "bool" ? (
                  <label class="check" for={id}>
                    <input
                      type="checkbox"
                      {...common}
                      checked={draft[f.key] === "true"}
                      onChange={(e) => set(String(e.currentTarget.checked))}
                    />
                    {t(`cfg_${f.key}` as Key)}
                  </label>
                ) : (
                  <label for={id}>{t(`cfg_${f.key}` as Key)}</label>
                )}
                {f.kind === "textarea" ? (
                  <textarea
                    {...common}
                    rows={3}
                    maxLength={1000}
                    value={draft[f.key] ?? ""}
                    onInput={(e) => set(e.currentTarget.value)}
                  />
                ) : f.kind === "color" ? (
                  <span class="color-row">
                    <input
                      type="color"
                      aria-label={t("cfg_accent_color")}
                      value={/^#[0-9a-fA-F]{6}$/.test(draft[f.key] ?? "") ? draft[f.key] : "#ff7a59"}
                      onInput={(e) => set(e.currentTarget.value)}
                    />
                    <input
                      {...common}
                      value={draft[f.key] ?? ""}
                      onInput={(e) => set(e.currentTarget.value)}
                    />
                  </span>
                ) : f.kind !== "bool" ? (
                  <input
                    {...common}
                    inputMode={
                      f.kind === "int" || f.kind === "mb"
                        ? "numeric"
                        : f.kind === "number"
                          ? "decimal"
                          : undefined
                    }
                    type="text"
                    value={draft[f.key] ?? ""}
                    onInput={(e) => set(e.currentTarget.value)}
                  />
                ) : null}
                <small id={help} class="help">
                  {t(`cfg_${f.key}_help` as Key)}
                </small>
                {err && (
                  <small id={`${id}-err`} class="error" data-testid={`invalid-${f.key}`}>
                    {err}
                  </small>
                )}
              </div>
            );
          })}
          <div class="row">
            <button type="submit" class="primary" data-testid="save-config">
              {t("save")}
            </button>
            {saved && (
              <span role="status" class="ok">
                {t("saved")}
              </span>
            )}
          </div>
        </form>
      )}
      <section class="card">
        <h2>{t("cover")}</h2>
        <p class="muted small">{t("cover_help")}</p>
        {pub?.cover_url && (
          <img class="cover-preview" src={pub.cover_url} alt={t("cover")} data-testid="cover-preview" />
        )}
        <div class="row">
          <label class="button">
            {t("cover_choose")}
            <input
              type="file"
              accept="image/jpeg,image/png,image/webp,image/gif"
              hidden
              data-testid="cover-input"
              onChange={(e) => {
                const f = e.currentTarget.files?.[0];
                e.currentTarget.value = "";
                if (f) uploadCover(f);
              }}
            />
          </label>
          {pub?.cover_url && (
            <button
              type="button"
              class="link danger"
              onClick={() =>
                guard(async () => {
                  await api("DELETE", "/admin/cover");
                  await loadPublicEvent();
                })
              }
            >
              {t("cover_remove")}
            </button>
          )}
        </div>
      </section>
      {disk && (
        <section class="card">
          <h2>{t("disk")}</h2>
          <div
            class="bar"
            role="meter"
            aria-valuemin={0}
            aria-valuemax={disk.total_bytes}
            aria-valuenow={used}
            aria-label={t("disk")}
            data-testid="disk-bar"
          >
            <span
              class="bar-other"
              style={{ width: `${(100 * Math.max(0, used - disk.media_bytes)) / (disk.total_bytes || 1)}%` }}
            />
            <span
              class="bar-media"
              style={{ width: `${(100 * disk.media_bytes) / (disk.total_bytes || 1)}%` }}
            />
          </div>
          <p>
            {formatBytes(used)} {t("disk_used")} · {formatBytes(disk.free_bytes)} {t("free")} /{" "}
            {formatBytes(disk.total_bytes)}
          </p>
          <p class="muted small">
            <span class="swatch media" /> {t("disk_media")} {formatBytes(disk.media_bytes)} (
            {t("disk_originals")} {formatBytes(disk.originals_bytes)} · {t("disk_derivatives")}{" "}
            {formatBytes(disk.derivatives_bytes)})
          </p>
        </section>
      )}
      {jobs && (
        <section class="card">
          <h2>{t("jobs")}</h2>
          {jobs.export_jobs.length > 0 ? (
            <table class="jobs" data-testid="jobs-table">
              <thead>
                <tr>
                  <th scope="col">{t("col_archive")}</th>
                  <th scope="col">{t("col_status")}</th>
                  <th scope="col">{t("col_progress")}</th>
                  <th scope="col">{t("col_updated")}</th>
                  <th scope="col">{t("col_message")}</th>
                </tr>
              </thead>
              <tbody>
                {jobs.export_jobs.map((j) => (
                  <tr key={j.id} class={`job-${j.status}`}>
                    <td>{j.kind === "zip" ? "Gallery.zip" : "Memories.zip"}</td>
                    <td>{t(`status_${j.status}` as Key) ?? j.status}</td>
                    <td>
                      <progress max={100} value={j.progress_pct} aria-label={t("col_progress")} />{" "}
                      {j.progress_pct}%
                    </td>
                    <td>{new Date(j.updated_at).toLocaleString(lang.value)}</td>
                    <td>{j.message ?? ""}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p class="muted">{t("status_none")}</p>
          )}
          {failedJobs && (
            <button
              type="button"
              onClick={() =>
                guard(async () => {
                  await api("POST", "/host/export/rebuild");
                  await load();
                })
              }
            >
              {t("rebuild")}
            </button>
          )}
          <table class="jobs">
            <tbody>
              <tr>
                <th scope="row">{t("derivative_backlog")}</th>
                <td data-testid="backlog">{jobs.derivative_backlog}</td>
              </tr>
              <tr>
                <th scope="row">{t("failed_uploads")}</th>
                <td data-testid="failed-uploads">{jobs.failed_uploads}</td>
              </tr>
            </tbody>
          </table>
        </section>
      )}
      {failed && <FailedUploadsTable list={failed} />}
    </main>
  );
}

interface FailedUploads {
  items: FailedUpload[];
  total: number;
}

/**
 * Uploads the pipeline gave up on, with the reason. Read-only: the API has no retry for them
 * (they are soft-deleted and refunded by the pipeline), and the help text says so.
 */
function FailedUploadsTable({ list }: { list: FailedUploads }) {
  const when = (iso: string | null) => (iso ? new Date(iso).toLocaleString(lang.value) : "");
  return (
    <section class="card" aria-labelledby="failed-title">
      <h2 id="failed-title">{t("failed_uploads")}</h2>
      {list.total === 0 ? (
        <p class="muted">{t("failed_none")}</p>
      ) : (
        <>
          <p class="muted small">{t("failed_uploads_help")}</p>
          <div class="table-scroll">
            <table class="jobs failed" data-testid="failed-table">
              <thead>
                <tr>
                  <th scope="col">{t("col_uploader")}</th>
                  <th scope="col">{t("col_type")}</th>
                  <th scope="col">{t("col_size")}</th>
                  <th scope="col">{t("col_uploaded")}</th>
                  <th scope="col">{t("col_attempts")}</th>
                  <th scope="col">{t("col_reason")}</th>
                  <th scope="col">{t("col_original")}</th>
                </tr>
              </thead>
              <tbody>
                {list.items.map((f) => (
                  <tr key={f.id} data-id={f.id}>
                    <td data-label={t("col_uploader")}>{f.uploader.display_name}</td>
                    <td data-label={t("col_type")}>{f.mime_type}</td>
                    <td data-label={t("col_size")}>{formatBytes(f.size_bytes)}</td>
                    <td data-label={t("col_uploaded")}>{when(f.created_at)}</td>
                    <td data-label={t("col_attempts")}>{f.attempts}</td>
                    <td class="reason" data-label={t("col_reason")}>
                      {f.reason ?? t("reason_unknown")}
                    </td>
                    <td data-label={t("col_original")}>
                      {f.original_kept ? t("original_kept") : t("original_reclaimed")}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {list.total > list.items.length && (
            <p class="muted small">
              {tf("failed_more", { shown: String(list.items.length), total: String(list.total) })}
            </p>
          )}
        </>
      )}
    </section>
  );
}
