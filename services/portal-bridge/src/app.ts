import type { Clock } from "@app/kit/clock";
import { systemClock } from "@app/kit/clock";
import { createHttpApp, matchSecret, registerHealth, safeEqual } from "@app/kit/http";
import { fastifyTrustProxy } from "@app/kit/http/proxy";
import type { Logger } from "@app/kit/logger";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { type Alerts, createAlerts } from "./alerts/alerts.js";
import {
  type Config,
  checkConfig,
  publicOrigin,
  stateDirOf,
  timetableConfigured,
  timetableOrigin,
} from "./config.js";
import type { Digest } from "./digest/digest.js";
import { openDigest } from "./digest/open.js";
import { registerWhatsNewTool } from "./digest/tool.js";
import { registerApiDocs } from "./http/api-docs.js";
import { registerFilesRoute } from "./http/files-route.js";
import { createGuard, defaultAllowedHosts } from "./http/guard.js";
import { installBridgeAuth } from "./http/route-auth.js";
import { registerSetupRoutes } from "./http/setup-routes.js";
import { registerStatusPage } from "./http/status-page.js";
import { registerTokenRoutes } from "./http/token-routes.js";
import { createKeepAlive, type KeepAlive } from "./keepalive/keepalive.js";
import { mcpHandler, setCredential } from "./mcp/route.js";
import { mcpServerFactory } from "./mcp/server.js";
import { createSessionStore, type SessionStore } from "./mcp/sessions.js";
import { SchoolTime } from "./mcp/time.js";
import { createTimetableService } from "./mcp/timetable-service.js";
import type { ToolContext } from "./mcp/tools.js";
import { registerBridgeMetrics } from "./metrics.js";
import { registerOAuthRoutes } from "./oauth/routes.js";
import { openOAuthServer } from "./oauth/server.js";
import { createOAuthStateFile } from "./oauth/state.js";
import { registerReadiness } from "./readiness/readiness.js";
import { cleanPaste } from "./token/jwt.js";
import {
  chooseStartupToken,
  createTokenManager,
  isReadableToken,
  type TokenManager,
} from "./token/manager.js";
import { createTokenStore } from "./token/store.js";
import { createPortalClient, type FetchFn } from "./upstream/portal.js";
import { createTimetableClient } from "./upstream/timetable.js";
import { BRIDGE_VERSION } from "./version.js";

export interface AppDeps {
  logger: Logger;
  clock?: Clock;
  /** Outbound fetch for the portal and the timetable service (tests may wrap it). */
  fetch?: FetchFn;
  /** Outbound fetch for alert webhooks (tests). */
  alertFetch?: FetchFn;
}

export interface BuiltApp {
  app: FastifyInstance;
  tokens: TokenManager;
  keepalive: KeepAlive;
  sessions: SessionStore;
  /** Webhook alerts (null without ALERT_WEBHOOK_URL). */
  alerts: Alerts | null;
  /** The digest (scheduled with DIGEST_SCHEDULE) and whats_new. */
  digest: Digest;
  /** Stops background work (keep-alive, sessions); call after app.close(). */
  close(): Promise<void>;
  /** Start-up banner rows: the MCP endpoint (never the path secret), the token page and state. */
  banner(url: string): [string, string][];
}

const MCP_METHODS = ["GET", "POST", "DELETE"] as const;

/** Build the portal-bridge app from a config object (tests build it in-process). */
export async function buildApp(config: Config, deps: AppDeps): Promise<BuiltApp> {
  checkConfig(config);
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger;

  if (!config.MCP_AUTH_TOKEN)
    logger.warn(
      "!!! MCP_AUTH_TOKEN is not set: /mcp, /api and /token are served WITHOUT authentication. Acceptable on localhost only; set MCP_AUTH_TOKEN (32 random bytes as hex) before exposing the bridge. !!!",
    );
  else if (config.MCP_AUTH_TOKEN.length < 32)
    logger.warn("MCP_AUTH_TOKEN is shorter than 32 characters; generate 32 random bytes as hex");
  if (!config.PORTAL_BASE_URL)
    logger.warn("PORTAL_BASE_URL is not set: the bridge starts, but portal tools answer 'not configured'");
  if (config.MCP_ALLOWED_HOSTS.length === 0 && ["0.0.0.0", "::"].includes(config.HOST))
    logger.warn(
      "listening on all interfaces: set MCP_ALLOWED_HOSTS to the public host name, or requests get 403",
    );

  const store = createTokenStore({ dir: stateDirOf(config), logger });
  const saved = await store.load();
  const envToken = config.PORTAL_JWT_COOKIE ? cleanPaste(config.PORTAL_JWT_COOKIE) : undefined;
  const initial = chooseStartupToken(envToken, saved?.token);
  if (envToken && !isReadableToken(envToken)) logger.warn("PORTAL_JWT_COOKIE is not a readable JWT; ignored");

  let keepalive: KeepAlive | null = null;
  let tokens: TokenManager | null = null;
  const portal = createPortalClient({
    baseUrl: config.PORTAL_BASE_URL,
    timeoutMs: config.UPSTREAM_TIMEOUT_MS,
    maxBytes: config.UPSTREAM_MAX_BYTES,
    clock,
    currentToken: () => tokens?.token ?? null,
    ...(deps.fetch ? { fetch: deps.fetch } : {}),
    onAuthFailure: (token, err) => keepalive?.reportRejected(token, err),
  });
  tokens = createTokenManager({ initial, clock, portal: () => portal, store, logger });
  const tk = tokens;
  keepalive = createKeepAlive({
    clock,
    logger,
    portal,
    intervalMs: config.KEEPALIVE_INTERVAL_MS,
    currentToken: () => tk.token,
  });
  const ka = keepalive;
  tokens.onReplaced(() => ka.restart());

  const timetable = timetableConfigured(config)
    ? createTimetableService({
        client: createTimetableClient({
          origin: timetableOrigin(config.TIMETABLE_SERVER as string),
          school: config.TIMETABLE_SCHOOL as string,
          user: config.TIMETABLE_USER as string,
          secret: config.TIMETABLE_SECRET as string,
          clientVersion: config.TIMETABLE_CLIENT_VERSION,
          timeoutMs: config.UPSTREAM_TIMEOUT_MS,
          maxBytes: config.UPSTREAM_MAX_BYTES,
          clock,
          ...(deps.fetch ? { fetch: deps.fetch } : {}),
        }),
        clock,
        presetStudent: config.TIMETABLE_STUDENT,
      })
    : null;

  const time = new SchoolTime(config.SCHOOL_TIMEZONE);
  const alerts = config.ALERT_WEBHOOK_URL
    ? createAlerts({
        url: config.ALERT_WEBHOOK_URL,
        format: config.ALERT_WEBHOOK_FORMAT,
        clock,
        logger,
        keepalive,
        tokens,
        label: (ms) => `${time.label(ms)} (${time.zone})`,
        ...(deps.alertFetch ? { fetch: deps.alertFetch } : {}),
      })
    : null;
  const ctx: ToolContext = { portal, tokens, keepalive, timetable, clock, logger, time };
  const digest = await openDigest({
    schedule: config.DIGEST_SCHEDULE,
    stateDir: stateDirOf(config),
    ctx,
    alerts,
    clock,
    logger,
  });
  const makeServer = mcpServerFactory(ctx, [(server) => registerWhatsNewTool(server, ctx, digest)]);
  const sessions = createSessionStore({
    clock,
    logger,
    maxSessions: config.MCP_MAX_SESSIONS,
    maxPerCredential: config.MCP_MAX_SESSIONS_PER_CREDENTIAL,
    idleMs: config.MCP_SESSION_IDLE_MS,
    makeServer,
  });

  const origin = publicOrigin(config);
  const oauth =
    config.MCP_OAUTH === "on" && origin
      ? await openOAuthServer({
          issuer: origin,
          maxClients: config.MCP_OAUTH_MAX_CLIENTS,
          clock,
          logger,
          stateFile: createOAuthStateFile({ dir: stateDirOf(config), logger }),
          checkOwnerSecret: (v) => matchSecret([v], [config.MCP_AUTH_TOKEN]) === 0,
        })
      : null;
  const baseHosts =
    config.MCP_ALLOWED_HOSTS.length > 0 ? config.MCP_ALLOWED_HOSTS : defaultAllowedHosts(config.HOST);
  const guard = createGuard({
    authToken: config.MCP_AUTH_TOKEN,
    connectorToken: config.MCP_CONNECTOR_TOKEN,
    // The public origin's host is where remote connectors (and the owner's browser) arrive.
    allowedHosts: origin ? [...baseHosts, new URL(origin).host] : baseHosts,
    allowedOrigins: config.MCP_ALLOWED_ORIGINS,
    ...(oauth
      ? {
          oauth: {
            verify: (t: string) => oauth.verifyAccessToken(t),
            resourceMetadataUrl: `${oauth.issuer}/.well-known/oauth-protected-resource`,
          },
        }
      : {}),
  });

  // The bridge never logs request paths (its path can be a secret): the kit's one line per
  // request carries the route pattern (`/:pathSecret/mcp`), never the path.
  const app = createHttpApp({ logger, fastify: { trustProxy: fastifyTrustProxy(config.TRUST_PROXY) } });
  // Before any route: the OpenAPI document and the auth hook see every route registered after.
  await registerApiDocs(app);
  registerHealth(app);
  registerBridgeMetrics(app, { token: config.METRICS_TOKEN, tokens, keepalive, sessions });
  // Open MCP streams would hold app.close() until the drain deadline; end them first.
  app.addHook("preClose", async () => sessions.closeAll());
  app.addHook("onRequest", async (req) => {
    // Probes and scrapers call in by an internal name; /metrics has its own token.
    const url = req.routeOptions.url;
    if (url === "/healthz" || url === "/readyz" || url === "/metrics") return;
    // OAuth discovery, registration, token and revocation are meant for cross-origin callers.
    if (req.routeOptions.config?.crossOrigin) guard.checkHost(req);
    else guard.checkHostAndOrigin(req);
  });

  // After the Host/Origin check: a foreign Origin gets 403 before any credential is looked at.
  installBridgeAuth(app, guard);
  const handle = mcpHandler({ sessions, makeServer, logger });
  app.route({
    method: [...MCP_METHODS],
    url: "/mcp",
    onRequest: async (req: FastifyRequest) => setCredential(req, guard.authenticate(req, "mcp")),
    handler: handle,
  });
  const pathSecret = config.MCP_PATH_SECRET;
  if (pathSecret) {
    app.route({
      method: [...MCP_METHODS],
      url: "/:pathSecret/mcp",
      // A wrong segment gets exactly the 404 of any unknown path.
      onRequest: async (req: FastifyRequest, reply: FastifyReply) => {
        const segment = (req.params as { pathSecret?: string }).pathSecret ?? "";
        if (!safeEqual(segment, pathSecret)) return reply.callNotFound();
        setCredential(req, "path");
      },
      handler: handle,
    });
  }
  registerTokenRoutes(app, { guard, tokens, keepalive });
  registerSetupRoutes(app, {
    guard,
    portal,
    tokens,
    keepalive,
    timetable,
    alerts,
    time,
    now: () => clock.now(),
    config: {
      publicUrl: origin,
      oauth: oauth !== null,
      allowedHosts: baseHosts,
      alertFormat: config.ALERT_WEBHOOK_FORMAT,
      digestSchedule: config.DIGEST_SCHEDULE,
    },
  });
  registerStatusPage(app, { version: BRIDGE_VERSION, tokens, keepalive });
  registerReadiness(app, { clock, tokens, keepalive });
  registerFilesRoute(app, { guard, portal });
  if (oauth) registerOAuthRoutes(app, { oauth });

  // Learn the instance's idle timeout (unauthenticated); the default 7200 s stands otherwise.
  if (portal.configured)
    void portal
      .getPublicJson<{ JWT_TIMEOUT_SECONDS?: unknown }>("/api/v3/config/public")
      .then((c) => {
        if (typeof c?.JWT_TIMEOUT_SECONDS === "number") ka.idleTimeoutS = c.JWT_TIMEOUT_SECONDS;
      })
      .catch(() => undefined);

  keepalive.start();
  alerts?.start();
  digest.start();
  const t = tokens.status();
  logger.info(
    {
      auth: config.MCP_AUTH_TOKEN ? "on" : "OFF",
      connector_token: config.MCP_CONNECTOR_TOKEN ? "on" : "off",
      path_secret: pathSecret ? "on" : "off",
      oauth: oauth ? `on (issuer ${oauth.issuer}, ${oauth.listClients().length} connected)` : "off",
      portal: config.PORTAL_BASE_URL ? "configured" : "not configured",
      timetable: timetable ? "configured" : "not configured",
      school_timezone: config.SCHOOL_TIMEZONE,
      alerts: alerts ? config.ALERT_WEBHOOK_FORMAT : "off",
      digest: config.DIGEST_SCHEDULE && alerts ? config.DIGEST_SCHEDULE : "off",
      token_source: t.source,
      token_expires_at: t.expires_at,
      keepalive: keepalive.status().state,
    },
    `portal-bridge ready: auth ${config.MCP_AUTH_TOKEN ? "on" : "OFF"}; token ${t.present ? `from ${t.source}, expires ${t.expires_at}` : "none (paste one at /token)"}; keep-alive ${keepalive.status().state}`,
  );

  return {
    app,
    tokens,
    keepalive,
    sessions,
    alerts,
    digest,
    banner: (url) => {
      const base = origin ?? url;
      const status = tokens.status();
      return [
        ["MCP endpoint", pathSecret ? `${base}/<MCP_PATH_SECRET>/mcp` : `${base}/mcp`],
        ["Status page", `${base}/`],
        [
          "Portal token",
          status.present ? `present, expires ${status.expires_at}` : `missing: paste one at ${base}/token`,
        ],
      ];
    },
    close: async () => {
      alerts?.stop();
      digest.stop();
      await digest.settled();
      ka.shutdown();
      await sessions.closeAll();
      await oauth?.flush();
    },
  };
}
