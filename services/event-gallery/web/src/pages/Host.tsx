import { useEffect, useState } from "preact/hooks";
import { ApiError, api, type EventInfo, type ExportStatus, formatBytes } from "../api.js";
import { me, navigate, refreshMe } from "../app-state.js";
import { joinUrl, publicEvent } from "../branding.js";
import { type Key, lang, t, tf, tn } from "../i18n.js";
import { onLive } from "../live.js";
import { useQrDataUrl } from "../qr.js";
import { useStore } from "../store.js";
import { PendingQueue } from "./Moderation.js";

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
  const pub = useStore(publicEvent);
  const link = joinUrl(pub);
  const qr = useQrDataUrl(link, 320);
  return (
    <section class="card invite">
      <h2>{t("invite")}</h2>
      {qr && <img src={qr} alt={link} width={200} height={200} data-testid="qr" />}
      <p class="link-text" data-testid="join-link">
        {link}
      </p>
      {!pub?.public_url && <p class="muted small">{t("public_url_hint")}</p>}
      <a
        class="button"
        href="/host/card"
        onClick={(e) => {
          e.preventDefault();
          navigate("/host/card");
        }}
      >
        {t("print_card")}
      </a>
    </section>
  );
}

/** Uploads waiting for approval (pre-moderation), oldest first, with a live count. */
interface AuditEntry {
  id: string;
  actor: { id: string; display_name: string } | null;
  action: string;
  target: { type: string; id: string | null };
  created_at: string;
}

const EVENT_ACTIONS: Record<string, Key> = {
  lock: "lock",
  unlock: "unlock",
  release: "release",
  reopen: "reopen",
};

/** The host audit as sentences: who did what to whom, newest first. */
function AuditLog({ users, version }: { users: HostUser[]; version: number }) {
  const [entries, setEntries] = useState<AuditEntry[]>([]);
  useEffect(() => {
    api<{ entries: AuditEntry[] }>("GET", "/host/audit?limit=50")
      .then((r) => setEntries(r.entries))
      .catch(() => {});
  }, [version]);
  const nameOf = (id: string | null) => users.find((u) => u.id === id)?.display_name ?? t("someone");
  const sentence = (e: AuditEntry) => {
    if (e.action.startsWith("event.")) {
      const k = EVENT_ACTIONS[e.action.slice(6)];
      return `${t("audit_event")} ${k ? t(k) : e.action.slice(6)}`;
    }
    const key = `audit_${e.action}` as Key;
    const verb = t(key) ?? e.action;
    return e.target.type === "user" ? `${verb} ${nameOf(e.target.id)}` : verb;
  };
  return (
    <section class="card audit">
      <h2>{t("audit_title")}</h2>
      {entries.length === 0 ? (
        <p class="muted">{t("audit_empty")}</p>
      ) : (
        <ol class="audit-list" data-testid="audit">
          {entries.map((e) => (
            <li key={e.id}>
              <time dateTime={e.created_at}>{new Date(e.created_at).toLocaleString(lang.value)}</time>{" "}
              <b>{e.actor?.display_name ?? t("someone")}</b> {sentence(e)}
            </li>
          ))}
        </ol>
      )}
    </section>
  );
}

export function HostPage() {
  const [ev, setEv] = useState<HostEvent | null>(null);
  const [exp, setExp] = useState<ExportStatus | null>(null);
  const [users, setUsers] = useState<HostUser[]>([]);
  const [pins, setPins] = useState<Record<string, string>>({});
  const [error, setError] = useState<string | null>(null);
  const [pendingCount, setPendingCount] = useState(0);
  const [auditVersion, setAuditVersion] = useState(0);
  const m = useStore(me);
  const isAdmin = m?.user.role === "admin";

  const load = async () => {
    const [e, x, u] = await Promise.all([
      api<HostEvent>("GET", "/host/event"),
      api<ExportStatus>("GET", "/export/status"),
      api<{ users: HostUser[] }>("GET", "/host/users"),
    ]);
    setEv(e);
    setExp(x);
    setUsers(u.users);
    setAuditVersion((v) => v + 1);
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
  const ask = (key: Key, u: HostUser) => confirm(tf(key, { name: u.display_name }));
  const jobLabel = (s: string) => t(`status_${s}` as Key) ?? s;

  return (
    <main class="host">
      <h1>
        {t("host_title")}
        {pendingCount > 0 && (
          <a
            class="badge-count"
            href="#pending"
            title={tn("waiting", pendingCount)}
            aria-label={tn("waiting", pendingCount)}
            data-testid="pending-live-badge"
          >
            {pendingCount}
          </a>
        )}
      </h1>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <div id="pending">
        <PendingQueue onCount={setPendingCount} />
      </div>
      <Invite />
      {ev && (
        <section class="card">
          <h2>{t("event_state")}</h2>
          {ev.low_disk_warning && <p class="error">{t("low_disk")}</p>}
          <p class="muted">
            {formatBytes(ev.free_bytes)} {t("free")} · {t("estimate")}{" "}
            <span data-testid="estimate">{formatBytes(ev.keepsake_estimate_bytes)}</span>
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
            <span class="badge-count" title={tn("requests", requests.length)} data-testid="reset-badge">
              {requests.length}
            </span>
          )}
        </h2>
        <table class="users">
          <tbody>
            {users.map((u) => (
              <tr key={u.id} class={u.is_banned ? "banned" : ""} data-name={u.display_name}>
                <td>
                  {u.display_name} <span class={`role role-${u.role}`}>{t(`role_${u.role}` as Key)}</span>
                  {u.is_banned && <span class="muted"> · {t("banned_label")}</span>}
                  {u.pin_reset_requested_at && <span class="badge-count">PIN</span>}
                </td>
                <td class="muted">{tn("uploads", u.upload_count)}</td>
                <td class="actions">
                  {isAdmin && u.role === "guest" && !u.is_banned && (
                    <button
                      type="button"
                      class="link"
                      data-testid="promote"
                      onClick={() =>
                        ask("confirm_promote", u) && guard(() => api("POST", `/host/users/${u.id}/promote`))
                      }
                    >
                      {t("promote")}
                    </button>
                  )}
                  {isAdmin && u.role === "host" && (
                    <button
                      type="button"
                      class="link"
                      data-testid="demote"
                      onClick={() =>
                        ask("confirm_demote", u) && guard(() => api("POST", `/host/users/${u.id}/demote`))
                      }
                    >
                      {t("demote")}
                    </button>
                  )}
                  {u.role !== "admin" &&
                    u.id !== m?.user.id &&
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
                        onClick={() =>
                          ask("confirm_ban", u) && guard(() => api("POST", `/host/users/${u.id}/ban`))
                        }
                      >
                        {t("ban")}
                      </button>
                    ))}
                  {u.role !== "admin" && (
                    <button
                      type="button"
                      class="link"
                      data-testid="reset-pin"
                      onClick={() =>
                        ask("confirm_reset_pin", u) &&
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
                    <span class="pin small" data-testid="new-pin">
                      {t("new_pin")}: {pins[u.id]}
                    </span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
      <AuditLog users={users} version={auditVersion} />
    </main>
  );
}
