import type { Alerts } from "../alerts/alerts.js";
import type { AlertFormat } from "../alerts/format.js";
import type { KeepAlive } from "../keepalive/keepalive.js";
import type { SchoolTime } from "../mcp/time.js";
import type { TimetableService } from "../mcp/timetable-service.js";
import type { TokenManager } from "../token/manager.js";
import { type PortalClient, PortalError } from "../upstream/portal.js";
import { TimetableError } from "../upstream/timetable.js";

/**
 * The set-up check: each configured part tried live, said in words (English and German) with
 * what to do. No secret, token or webhook URL ever appears in a message.
 */
export type CheckState = "ok" | "warning" | "error";
export type CheckId = "portal_token" | "timetable" | "public_url" | "alerts";
export type Lang = "en" | "de";

export interface SetupCheck {
  id: CheckId;
  state: CheckState;
  message: Record<Lang, string>;
}

export interface SetupDeps {
  portal: PortalClient;
  tokens: TokenManager;
  keepalive: KeepAlive;
  timetable: TimetableService | null;
  alerts: Alerts | null;
  time: SchoolTime;
  now: () => number;
  config: {
    publicUrl: string | undefined;
    oauth: boolean;
    allowedHosts: string[];
    alertFormat: AlertFormat;
    digestSchedule: string | undefined;
  };
}

const check = (id: CheckId, state: CheckState, en: string, de: string): SetupCheck => ({
  id,
  state,
  message: { en, de },
});

const KA_DE = {
  running: "läuft",
  retrying: "versucht es erneut",
  stopped: "gestoppt",
  disabled: "aus",
} as const;

const PASTE_EN = "Log in to the portal in a browser, copy the jwt cookie and paste it on the /token page.";
const PASTE_DE =
  "Im Browser beim Portal anmelden, das Cookie jwt kopieren und auf der Seite /token einfügen.";

export async function portalTokenCheck(d: SetupDeps): Promise<SetupCheck> {
  const id = "portal_token";
  if (!d.portal.configured)
    return check(
      id,
      "error",
      "The portal address is not set. Set PORTAL_BASE_URL to the portal's address (e.g. https://portal.example.org) and restart.",
      "Die Portal-Adresse fehlt. PORTAL_BASE_URL auf die Adresse des Portals setzen (z. B. https://portal.example.org) und neu starten.",
    );
  const token = d.tokens.status();
  if (!token.present)
    return check(id, "error", `No portal token yet. ${PASTE_EN}`, `Noch kein Portal-Token. ${PASTE_DE}`);
  let me: { user?: { firstName?: unknown; lastName?: unknown; id?: unknown } } | null;
  try {
    me = await d.portal.getJson("/api/v3/me");
  } catch (err) {
    if (err instanceof PortalError && err.isAuthFailure)
      return check(
        id,
        "error",
        `The portal refused the token (401): the session has ended. ${PASTE_EN}`,
        `Das Portal lehnt das Token ab (401): die Sitzung ist beendet. ${PASTE_DE}`,
      );
    const why = err instanceof PortalError ? err.message : "failed";
    return check(
      id,
      "error",
      `The portal could not be reached: ${why} Check PORTAL_BASE_URL and the network.`,
      `Das Portal ist nicht erreichbar: ${why} PORTAL_BASE_URL und die Netzverbindung prüfen.`,
    );
  }
  const name = `${String(me?.user?.firstName ?? "")} ${String(me?.user?.lastName ?? "")}`.trim() || "?";
  const exp = token.expires_at ? Date.parse(token.expires_at) : null;
  const days = exp === null ? null : Math.floor((exp - d.now()) / 86_400_000);
  const expEn = exp === null ? "" : `; expires ${d.time.label(exp)} (in ${days} days)`;
  const expDe = exp === null ? "" : `; läuft ab am ${d.time.label(exp)} (in ${days} Tagen)`;
  const up = d.keepalive.upstreamStatus();
  const ka = d.keepalive.status();
  const budgetEn =
    up.last_budget_s === null ? "" : `; idle budget ${up.last_budget_s} s of ${up.idle_timeout_s} s`;
  const budgetDe =
    up.last_budget_s === null ? "" : `; Leerlauf-Budget ${up.last_budget_s} s von ${up.idle_timeout_s} s`;
  const base = `Works: account ${name}${expEn}${budgetEn}; keep-alive ${ka.state}.`;
  const baseDe = `Funktioniert: Konto ${name}${expDe}${budgetDe}; Keep-alive ${KA_DE[ka.state]}.`;
  if (days !== null && days < 3)
    return check(
      id,
      "warning",
      `${base} The token expires soon. ${PASTE_EN}`,
      `${baseDe} Das Token läuft bald ab. ${PASTE_DE}`,
    );
  if (ka.state === "disabled")
    return check(
      id,
      "warning",
      `${base} KEEPALIVE_INTERVAL_MS=0: the portal forgets the session after ${Math.round(up.idle_timeout_s / 60)} minutes without use.`,
      `${baseDe} KEEPALIVE_INTERVAL_MS=0: das Portal vergisst die Sitzung nach ${Math.round(up.idle_timeout_s / 60)} Minuten ohne Nutzung.`,
    );
  return check(id, "ok", base, baseDe);
}

export async function timetableCheck(d: SetupDeps): Promise<SetupCheck> {
  const id = "timetable";
  if (!d.timetable)
    return check(
      id,
      "warning",
      "Not set up (optional). For the timetable, homework, exams and the digest's changes: in the WebUntis app open Profile → Share access, and set TIMETABLE_SERVER, TIMETABLE_SCHOOL, TIMETABLE_USER and TIMETABLE_SECRET from it.",
      "Nicht eingerichtet (optional). Für Stundenplan, Hausaufgaben, Prüfungen und die Änderungen im Digest: in der WebUntis-App Profil → Zugriff teilen öffnen und daraus TIMETABLE_SERVER, TIMETABLE_SCHOOL, TIMETABLE_USER und TIMETABLE_SECRET setzen.",
    );
  try {
    const u = await d.timetable.userData(true);
    const kids = await d.timetable.children();
    const who = `${String(u.displayName ?? "?")} (${String(u.elemType ?? "?")}${u.schoolName ? `, ${String(u.schoolName)}` : ""})`;
    const kidsEn = kids.length ? `; children: ${kids.map((k) => k.first_name).join(", ")}` : "";
    const kidsDe = kids.length ? `; Kinder: ${kids.map((k) => k.first_name).join(", ")}` : "";
    return check(
      id,
      "ok",
      `Works: user ${who}${kidsEn}; the clock of this machine is within the service's tolerance.`,
      `Funktioniert: Benutzer ${who}${kidsDe}; die Uhr dieses Rechners liegt in der Toleranz des Dienstes.`,
    );
  } catch (err) {
    if (err instanceof TimetableError && err.kind === "invalid_client_time") {
      const s = err.skewS ?? 0;
      return check(
        id,
        "error",
        `The timetable service refuses this machine's clock (-8524): it is ${Math.abs(s)} s ${s >= 0 ? "ahead of" : "behind"} the server. Set the clock right (enable NTP time sync).`,
        `Der Stundenplan-Dienst lehnt die Uhr dieses Rechners ab (-8524): sie geht ${Math.abs(s)} s ${s >= 0 ? "vor" : "nach"}. Die Uhr stellen (NTP-Zeitabgleich einschalten).`,
      );
    }
    if (err instanceof TimetableError && err.code === -8521)
      return check(
        id,
        "error",
        "The timetable key was refused (-8521). A new key from the app's sharing dialog invalidates the old one: copy the current key into TIMETABLE_SECRET and restart.",
        "Der Stundenplan-Schlüssel wurde abgelehnt (-8521). Ein neuer Schlüssel aus dem Teilen-Dialog der App macht den alten ungültig: den aktuellen in TIMETABLE_SECRET eintragen und neu starten.",
      );
    const why = err instanceof Error ? err.message : "failed";
    return check(
      id,
      "error",
      `The timetable service did not answer: ${why} Check TIMETABLE_SERVER and TIMETABLE_SCHOOL.`,
      `Der Stundenplan-Dienst antwortet nicht: ${why} TIMETABLE_SERVER und TIMETABLE_SCHOOL prüfen.`,
    );
  }
}

export function publicUrlCheck(d: SetupDeps): SetupCheck {
  const id = "public_url";
  const c = { ...d.config, allowedHosts: [...new Set(d.config.allowedHosts)] };
  if (!c.publicUrl)
    return check(
      id,
      "warning",
      `No public address. Clients on this machine or network work (allowed hosts: ${c.allowedHosts.join(", ")}). For assistant apps (Claude, ChatGPT connectors) set MCP_PUBLIC_URL to the https address they reach, and MCP_OAUTH=on.`,
      `Keine öffentliche Adresse. Clients auf diesem Rechner oder im Netz funktionieren (erlaubte Hosts: ${c.allowedHosts.join(", ")}). Für Assistenten-Apps (Claude, ChatGPT-Connectoren) MCP_PUBLIC_URL auf die https-Adresse setzen, unter der sie die Bridge erreichen, und MCP_OAUTH=on.`,
    );
  const host = new URL(c.publicUrl).host;
  const hosts = [...new Set([...c.allowedHosts, host])].join(", ");
  if (!c.oauth)
    return check(
      id,
      "warning",
      `Connectors reach ${c.publicUrl}/mcp (allowed hosts: ${hosts}), but MCP_OAUTH is off: assistant apps cannot sign in. Set MCP_OAUTH=on, or give clients that send headers the shared secret.`,
      `Connectoren erreichen ${c.publicUrl}/mcp (erlaubte Hosts: ${hosts}), aber MCP_OAUTH ist aus: Assistenten-Apps können sich nicht anmelden. MCP_OAUTH=on setzen oder Clients mit Headern das gemeinsame Geheimnis geben.`,
    );
  return check(
    id,
    "ok",
    `Connectors use ${c.publicUrl}/mcp and sign in with OAuth (allowed hosts: ${hosts}).`,
    `Connectoren nutzen ${c.publicUrl}/mcp und melden sich per OAuth an (erlaubte Hosts: ${hosts}).`,
  );
}

export function alertsCheck(d: SetupDeps): SetupCheck {
  const id = "alerts";
  const c = d.config;
  if (!d.alerts)
    return check(
      id,
      "warning",
      `No alert webhook: you will not hear when the portal session ends${c.digestSchedule ? ", and no digest is sent" : ""}. Set ALERT_WEBHOOK_URL (ntfy, Gotify, Slack or Mattermost) and ALERT_WEBHOOK_FORMAT.`,
      `Kein Alarm-Webhook: Sie erfahren nicht, wenn die Portal-Sitzung endet${c.digestSchedule ? ", und es wird kein Digest gesendet" : ""}. ALERT_WEBHOOK_URL (ntfy, Gotify, Slack oder Mattermost) und ALERT_WEBHOOK_FORMAT setzen.`,
    );
  const digestEn = c.digestSchedule
    ? `; digest at ${c.digestSchedule}`
    : "; no digest (DIGEST_SCHEDULE unset)";
  const digestDe = c.digestSchedule
    ? `; Digest um ${c.digestSchedule}`
    : "; kein Digest (DIGEST_SCHEDULE nicht gesetzt)";
  return check(
    id,
    "ok",
    `Set (format ${c.alertFormat})${digestEn}. Send a test alert to see it arrive.`,
    `Eingerichtet (Format ${c.alertFormat})${digestDe}. Einen Test-Alarm senden, um den Empfang zu prüfen.`,
  );
}

export async function runSetupChecks(d: SetupDeps): Promise<SetupCheck[]> {
  const [portal, timetable] = await Promise.all([portalTokenCheck(d), timetableCheck(d)]);
  return [portal, timetable, publicUrlCheck(d), alertsCheck(d)];
}
