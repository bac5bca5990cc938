import { useEffect, useState } from "preact/hooks";
import QRCode from "qrcode";
import { ApiError, api, type EventInfo, type ExportStatus, formatBytes } from "../api.js";
import { refreshMe } from "../app-state.js";
import { type Key, t } from "../i18n.js";
import { onLive } from "../live.js";

interface HostEvent {
  event: EventInfo;
  uploads_locked_at: string | null;
  export_released_at: string | null;
  export_epoch: number;
  low_disk_warning: boolean;
  free_bytes: number;
  keepsake_estimate_bytes: number;
}
interface HostUser {
  id: string;
  display_name: string;
  role: string;
  is_banned: boolean;
  upload_count: number;
  pin_reset_requested_at: string | null;
  pin_locked_until: string | null;
}

function Invite() {
  const [qr, setQr] = useState<string | null>(null);
  const link = `${location.origin}/join`;
  useEffect(() => {
    QRCode.toDataURL(link, { width: 320, margin: 1 }).then(setQr, () => setQr(null));
  }, [link]);
  return (
    <section class="card invite printable">
      <h2>{t("invite")}</h2>
      {qr && <img src={qr} alt={link} width={240} height={240} data-testid="qr" />}
      <p class="link-text">{link}</p>
      <button type="button" class="no-print" onClick={() => print()}>
        {t("print")}
      </button>
    </section>
  );
}

export function HostPage() {
  const [ev, setEv] = useState<HostEvent | null>(null);
  const [exp, setExp] = useState<ExportStatus | null>(null);
  const [users, setUsers] = useState<HostUser[]>([]);
  const [pins, setPins] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);

  const load = async () => {
    const [e, x, u] = await Promise.all([
      api<HostEvent>("GET", "/host/event"),
      api<ExportStatus>("GET", "/export/status"),
      api<{ users: HostUser[] }>("GET", "/host/users"),
    ]);
    setEv(e);
    setExp(x);
    setUsers(u.users);
  };
  const guard = async (fn: () => Promise<unknown>) => {
    setError(null);
    try {
      await fn();
      await load();
      await refreshMe();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : t("error"));
    }
  };

  useEffect(() => {
    load().catch(() => {});
    let timer: ReturnType<typeof setTimeout> | null = null;
    const off = onLive(() => {
      // Any change (reset request, ban, export progress) → refetch, coalesced.
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => load().catch(() => {}), 300);
    });
    // Export progress is polled while a build runs (progress is not pushed).
    const poll = setInterval(() => {
      load().catch(() => {});
    }, 5000);
    return () => {
      off();
      clearInterval(poll);
    };
  }, []);

  const transition = (name: "lock" | "unlock" | "release" | "reopen") => {
    if (name === "reopen" && !confirm(t("confirm_reopen"))) return;
    if (name === "release" && !confirm(t("confirm_release"))) return;
    guard(() => api("POST", `/host/event/${name}`));
  };
  const requests = users.filter((u) => u.pin_reset_requested_at);
  const jobLabel = (s: string) => t(`status_${s}` as Key) ?? s;

  return (
    <main class="host">
      <h1>{t("host_title")}</h1>
      {error && <p class="error">{error}</p>}
      <Invite />
      {ev && (
        <section class="card">
          <h2>{t("event_state")}</h2>
          {ev.low_disk_warning && <p class="error">{t("low_disk")}</p>}
          <p class="muted">
            {formatBytes(ev.free_bytes)} {t("free")} · {t("estimate")}{" "}
            {formatBytes(ev.keepsake_estimate_bytes)}
          </p>
          <div class="row wrap">
            {!ev.event.released &&
              (ev.event.uploads_locked ? (
                <button type="button" onClick={() => transition("unlock")}>
                  {t("unlock")}
                </button>
              ) : (
                <button type="button" onClick={() => transition("lock")}>
                  {t("lock")}
                </button>
              ))}
            {!ev.event.released ? (
              <button
                type="button"
                class="primary"
                data-testid="release"
                onClick={() => transition("release")}
              >
                {t("release")}
              </button>
            ) : (
              <button type="button" class="danger" data-testid="reopen" onClick={() => transition("reopen")}>
                {t("reopen")}
              </button>
            )}
          </div>
        </section>
      )}
      {exp?.released && (
        <section class="card" data-testid="export-status">
          <h2>{t("export_status")}</h2>
          {(["zip", "html"] as const).map((k) => (
            <div class="row" key={k}>
              <span class="fname">{k === "zip" ? "Gallery.zip" : "Memories.zip"}</span>
              <progress max={100} value={exp[k].progress_pct} />
              <span data-testid={`export-${k}`}>{jobLabel(exp[k].status)}</span>
              {exp[k].message && <span class="error small">{exp[k].message}</span>}
            </div>
          ))}
          {(exp.zip.status === "failed" || exp.html.status === "failed") && (
            <button type="button" onClick={() => guard(() => api("POST", "/host/export/rebuild"))}>
              {t("rebuild")}
            </button>
          )}
        </section>
      )}
      <section class="card">
        <h2>
          {t("users")}
          {requests.length > 0 && (
            <span class="badge-count" title={t("reset_requests")} data-testid="reset-badge">
              {requests.length}
            </span>
          )}
        </h2>
        <table class="users">
          <tbody>
            {users.map((u) => (
              <tr key={u.id} class={u.is_banned ? "banned" : ""} data-name={u.display_name}>
                <td>
                  {u.display_name} <span class="muted">{u.role}</span>
                  {u.pin_reset_requested_at && <span class="badge-count">PIN</span>}
                </td>
                <td class="muted">
                  {u.upload_count} {t("uploads_count")}
                </td>
                <td>
                  {u.role !== "admin" &&
                    (u.is_banned ? (
                      <button
                        type="button"
                        class="link"
                        onClick={() => guard(() => api("POST", `/host/users/${u.id}/unban`))}
                      >
                        {t("unban")}
                      </button>
                    ) : (
                      <button
                        type="button"
                        class="link danger"
                        data-testid="ban"
                        onClick={() => guard(() => api("POST", `/host/users/${u.id}/ban`))}
                      >
                        {t("ban")}
                      </button>
                    ))}
                  {u.role !== "admin" && (
                    <button
                      type="button"
                      class="link"
                      onClick={() =>
                        guard(async () => {
                          const r = await api<{ pin: string }>("POST", `/host/users/${u.id}/reset-pin`);
                          setPins((p) => ({ ...p, [u.id]: r.pin }));
                        })
                      }
                    >
                      {t("reset_pin")}
                    </button>
                  )}
                  {pins[u.id] && (
                    <span class="pin small">
                      {t("new_pin")}: {pins[u.id]}
                    </span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </main>
  );
}
