import { ConfigError, commonEnv, csvList, type EnvValues, envInt, envVar } from "@app/kit/config";
import { metricsTokenEnv } from "@app/kit/http/metrics";
import { proxyEnv } from "@app/kit/http/proxy";
import { z } from "zod";
import { ALERT_FORMATS, type AlertFormat } from "./alerts/format.js";
import { parseDigestSchedule } from "./digest/schedule.js";

/** A current WebUntis mobile client version (the endpoint refuses requests without `v=`). */
export const DEFAULT_TIMETABLE_CLIENT_VERSION = "i2.2";

const optionalString = z.string().optional();

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Every variable portal-bridge reads; the same spec validates start-up and prints --help. */
export const envSpec = {
  ...commonEnv("portal-bridge", 3003),
  ...proxyEnv(),
  DATA_DIR: envVar(z.string().min(1).default("./data/portal-bridge"), "where the bridge's state lives"),
  // Shared by `npm start` for every service; the bridge has no database and ignores it.
  DATABASE_URL: envVar(optionalString, "ignored: the bridge has no database", { secret: true }),
  MCP_AUTH_TOKEN: envVar(
    optionalString,
    "shared secret for /mcp, /api and /token; unset serves WITHOUT authentication (localhost only)",
    { secret: true },
  ),
  MCP_CONNECTOR_TOKEN: envVar(
    z.string().min(32, "must be at least 32 characters").optional(),
    "optional second secret, accepted on /mcp only; at least 32 characters, differs from MCP_AUTH_TOKEN",
    { secret: true },
  ),
  MCP_PATH_SECRET: envVar(
    z
      .string()
      .min(32, "must be at least 32 characters")
      .regex(/^[A-Za-z0-9_-]+$/, "must contain only URL-safe characters (A-Z a-z 0-9 _ -)")
      .optional(),
    "optional path segment: /<MCP_PATH_SECRET>/mcp is served without headers",
    { secret: true },
  ),
  MCP_ALLOWED_HOSTS: envVar(csvList, "comma list of accepted Host values (DNS-rebinding protection)", {
    defaultText: "the listen host and localhost",
  }),
  MCP_ALLOWED_ORIGINS: envVar(
    csvList,
    "comma list of accepted Origin values for requests that carry Origin (same-origin is always accepted)",
    { defaultText: "none" },
  ),
  MCP_OAUTH: envVar(
    z.enum(["on", "off"]).default("off"),
    "on: the bridge is its own OAuth 2.1 authorization server for remote connectors (needs MCP_AUTH_TOKEN and MCP_PUBLIC_URL)",
  ),
  MCP_PUBLIC_URL: envVar(
    z
      .url({ protocol: /^https?$/, error: "must be an http(s) origin such as https://bridge.example.org" })
      .optional(),
    "the bridge's public origin (OAuth issuer and resource); its host is also an allowed Host",
  ),
  MCP_OAUTH_MAX_CLIENTS: envVar(envInt(20, 1, 1000), "registered OAuth clients at most"),
  MCP_MAX_SESSIONS: envVar(
    envInt(100, 1, 10_000),
    "cap on open MCP sessions; at the cap the least recently used idle session is closed (its client gets 404 and re-initializes)",
  ),
  MCP_MAX_SESSIONS_PER_CREDENTIAL: envVar(
    envInt(20, 1, 10_000),
    "cap on open MCP sessions per credential (shared secret, connector token, path secret); the credential's own least recently used idle session is closed at its cap",
  ),
  MCP_SESSION_IDLE_MS: envVar(
    envInt(30 * 60_000, 1000, 24 * 3600_000),
    "an MCP session unused this long (ms) is closed",
  ),
  KEEPALIVE_INTERVAL_MS: envVar(
    envInt(1_800_000, 0, 7_200_000),
    "keep-alive period in ms (default 30 minutes); 0 disables the keep-alive",
  ),
  STATE_DIR: envVar(optionalString, "where the replacement upstream token is saved", {
    defaultText: "DATA_DIR",
  }),
  PORTAL_BASE_URL: envVar(
    z
      .url({ protocol: /^https?$/, error: "must be an http(s) origin such as https://portal.example.org" })
      .optional(),
    "origin of the school portal; unset: the bridge starts but portal tools answer 'not configured'",
  ),
  PORTAL_JWT_COOKIE: envVar(optionalString, "initial upstream token (the jwt cookie of a browser session)", {
    secret: true,
  }),
  UPSTREAM_TIMEOUT_MS: envVar(envInt(15_000, 100, 600_000), "timeout per upstream request in ms"),
  UPSTREAM_MAX_BYTES: envVar(
    envInt(10 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    "cap on any upstream answer the bridge reads (portal JSON and timetable), in bytes",
  ),
  SCHOOL_TIMEZONE: envVar(
    z.string().default("Europe/Berlin").refine(isTimeZone, "must be an IANA time zone such as Europe/Berlin"),
    "IANA time zone for every date the tools show or interpret",
  ),
  TIMETABLE_STUDENT: envVar(
    z.string().trim().min(1).max(100).optional(),
    "for parent accounts: the child (first name or id) the timetable tools read when none is named",
  ),
  ALERT_WEBHOOK_URL: envVar(
    z.url({ protocol: /^https?$/, error: "must be an http(s) URL" }).optional(),
    "receives a POST when the keep-alive stops, the token has under 3 days left, and on recovery",
    { secret: true },
  ),
  ALERT_WEBHOOK_FORMAT: envVar(
    z
      .enum([...ALERT_FORMATS, "text"])
      .default("json")
      // "text" was the earlier name of the plain-text body ntfy takes.
      .transform((v): AlertFormat => (v === "text" ? "ntfy" : v)),
    "json: {event, title, text, at}; slack: {text} (Slack, Mattermost); ntfy: text/plain with Title/Tags/Priority headers; gotify: {title, message, priority}",
    { defaultText: "json" },
  ),
  DIGEST_SCHEDULE: envVar(
    z
      .string()
      .trim()
      .optional()
      .superRefine((v, c) => {
        if (v === undefined || v === "") return;
        try {
          parseDigestSchedule(v);
        } catch {
          c.addIssue({
            code: "custom",
            message:
              'must be a comma list of HH:MM times, each optionally after weekdays, e.g. "Mon-Fri 06:45,Sun-Thu 18:00"',
          });
        }
      }),
    "local times (SCHOOL_TIMEZONE) a digest of what changed is posted through the alert webhook, e.g. Mon-Fri 06:45,Sun-Thu 18:00; unset: no digest",
    { defaultText: "unset (no digest)" },
  ),
  TIMETABLE_SERVER: envVar(optionalString, "timetable server: a bare host (https is used) or an origin"),
  TIMETABLE_SCHOOL: envVar(optionalString, "school identifier for the timetable service"),
  TIMETABLE_USER: envVar(optionalString, "timetable user"),
  TIMETABLE_SECRET: envVar(
    z
      .string()
      .regex(/^[A-Za-z2-7=\s]+$/, "must be a base32 key (letters A-Z and digits 2-7)")
      .optional(),
    "timetable key from the mobile-app sharing dialog; a change needs a restart",
    { secret: true },
  ),
  TIMETABLE_CLIENT_VERSION: envVar(
    z.string().min(1).default(DEFAULT_TIMETABLE_CLIENT_VERSION),
    "the timetable endpoint's required version parameter",
  ),
  METRICS_TOKEN: metricsTokenEnv(),
};

export type Config = EnvValues<typeof envSpec>;

const TIMETABLE_VARS = [
  "TIMETABLE_SERVER",
  "TIMETABLE_SCHOOL",
  "TIMETABLE_USER",
  "TIMETABLE_SECRET",
] as const;

/**
 * Rules that span variables (loadEnv checks one variable at a time). Throws ConfigError naming
 * the variable and the rule, never a value.
 */
export function checkConfig(config: Config): void {
  if (config.MCP_CONNECTOR_TOKEN !== undefined && config.MCP_CONNECTOR_TOKEN === config.MCP_AUTH_TOKEN)
    throw new ConfigError("MCP_CONNECTOR_TOKEN", "must differ from MCP_AUTH_TOKEN");
  if (config.MCP_PATH_SECRET !== undefined) {
    if (
      config.MCP_PATH_SECRET === config.MCP_AUTH_TOKEN ||
      config.MCP_PATH_SECRET === config.MCP_CONNECTOR_TOKEN
    )
      throw new ConfigError("MCP_PATH_SECRET", "must differ from MCP_AUTH_TOKEN and MCP_CONNECTOR_TOKEN");
    if (config.MCP_PATH_SECRET === "mcp" || config.MCP_PATH_SECRET === "api")
      throw new ConfigError("MCP_PATH_SECRET", "must not be a route name");
  }
  if (config.MCP_PUBLIC_URL !== undefined) {
    const u = new URL(config.MCP_PUBLIC_URL);
    if (u.username || u.password || u.search || u.hash || (u.pathname !== "/" && u.pathname !== ""))
      throw new ConfigError("MCP_PUBLIC_URL", "must be an origin without path, query or credentials");
    if (u.protocol === "http:" && !["localhost", "127.0.0.1", "[::1]"].includes(u.hostname))
      throw new ConfigError("MCP_PUBLIC_URL", "must use https unless the host is loopback");
  }
  if (config.MCP_OAUTH === "on") {
    if (!config.MCP_AUTH_TOKEN) throw new ConfigError("MCP_AUTH_TOKEN", "must be set when MCP_OAUTH=on");
    if (!config.MCP_PUBLIC_URL) throw new ConfigError("MCP_PUBLIC_URL", "must be set when MCP_OAUTH=on");
  }
  const set = TIMETABLE_VARS.filter((k) => config[k] !== undefined);
  if (set.length > 0 && set.length < TIMETABLE_VARS.length) {
    const missing = TIMETABLE_VARS.find((k) => config[k] === undefined) ?? "TIMETABLE_SERVER";
    throw new ConfigError(missing, "must be set when any TIMETABLE_* variable is set");
  }
  if (config.PORTAL_BASE_URL !== undefined) {
    const u = new URL(config.PORTAL_BASE_URL);
    if (u.username || u.password || u.search || u.hash || (u.pathname !== "/" && u.pathname !== ""))
      throw new ConfigError("PORTAL_BASE_URL", "must be an origin without path, query or credentials");
  }
}

/** MCP_PUBLIC_URL without a trailing slash (the OAuth issuer), or undefined. */
export const publicOrigin = (config: Config): string | undefined =>
  config.MCP_PUBLIC_URL === undefined ? undefined : new URL(config.MCP_PUBLIC_URL).origin;

/** Where the replacement token lives: STATE_DIR, else DATA_DIR. */
export const stateDirOf = (config: Config): string => config.STATE_DIR ?? config.DATA_DIR;

/** True when all four TIMETABLE_* variables are set. */
export const timetableConfigured = (config: Config): boolean =>
  TIMETABLE_VARS.every((k) => config[k] !== undefined);

/** `TIMETABLE_SERVER` as an origin: a bare host from the sharing dialog means https. */
export function timetableOrigin(server: string): string {
  const s = server.trim().replace(/\/+$/, "");
  return /^https?:\/\//i.test(s) ? s : `https://${s}`;
}
