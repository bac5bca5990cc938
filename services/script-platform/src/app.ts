import { join } from "node:path";
import type { Clock } from "@app/kit/clock";
import { systemClock } from "@app/kit/clock";
import { openDatabase } from "@app/kit/db";
import { createHttpApp, registerHealth } from "@app/kit/http";
import { fastifyTrustProxy, publicOrigin } from "@app/kit/http/proxy";
import { registerReadiness } from "@app/kit/http/readiness";
import type { Logger } from "@app/kit/logger";
import type { FastifyInstance } from "fastify";
import { type Config, claimLease, subscriberTokenTtl } from "./config.js";
import type { PlatformContext, RouteModule, Worker } from "./context.js";
import { resolveApp } from "./control/apps.js";
import { appsRepo } from "./control/apps-repository.js";
import { createAuth } from "./control/auth.js";
import { bootstrapAdmin } from "./control/bootstrap.js";
import { createRouteTable } from "./control/route-table.js";
import { createSandboxPolicy } from "./control/sandbox-policy.js";
import { scriptsRepo } from "./control/scripts-repository.js";
import { createSecretBox, loadMasterKey } from "./crypto/secret-box.js";
import { migrations } from "./db/migrations/index.js";
import type { PlatformDB } from "./db/schema.js";
import { createDispatch, type Dispatch } from "./dispatch/dispatch.js";
import type { LocalRuns } from "./dispatch/enqueue.js";
import { createRuntime, dispatcherWorker, type Runtime } from "./execution/runtime.js";
import { createAdminGate, installAdminGate } from "./http/admin-gate.js";
import { registerApiDocs } from "./http/api-docs.js";
import { installPlatformAuth } from "./http/route-auth.js";
import { adminRoutes } from "./http/routes/admins.js";
import { appRoutes } from "./http/routes/apps.js";
import { authRoutes } from "./http/routes/auth.js";
import { authoringRoutes } from "./http/routes/authoring.js";
import { dashboardRoutes } from "./http/routes/dashboard.js";
import { dataBrowserRoutes } from "./http/routes/data-browser.js";
import { deadLetterRoutes } from "./http/routes/dead-letters.js";
import { emailRoutes } from "./http/routes/email.js";
import { executeRoutes } from "./http/routes/execute.js";
import { executionRoutes } from "./http/routes/executions.js";
import { executionStreamRoutes } from "./http/routes/executions-stream.js";
import { filesAdminRoutes } from "./http/routes/files-admin.js";
import { realtimeRoutes } from "./http/routes/realtime.js";
import { routeRoutes } from "./http/routes/routes.js";
import { scriptRoutes } from "./http/routes/scripts.js";
import { secretRoutes } from "./http/routes/secrets.js";
import { topicRoutes } from "./http/routes/topics.js";
import { triggerRoutes } from "./http/routes/triggers.js";
import { userRoutes } from "./http/routes/user-routes.js";
import { versionRoutes } from "./http/routes/version.js";
import { type PlatformMetrics, registerPlatformMetrics } from "./metrics.js";
import { createRealtimeHub, type RealtimeHub } from "./realtime/hub.js";
import { triggerSettings } from "./triggers/settings.js";

/**
 * What carries scripts for one app instance, built once by buildApp with that instance's clock,
 * database (and so dialect), config and logger; nothing of it is process-global, so two apps in
 * one process share nothing.
 */
export interface Engine {
  /** Outbox writes, change events, failure policy, dead letters, cron and retention. */
  dispatch: Dispatch;
  /** Worker pool, executor, outbox dispatcher, sync inbox, invoke and draft runs. */
  runtime: Runtime;
  /** Fan-out of committed publishDurable messages to this process's SSE subscribers. */
  realtime: RealtimeHub;
  metrics: PlatformMetrics;
}

/** Route modules, one line each, with the engine parts each needs handed in explicitly. */
function routeModules(engine: Engine): RouteModule[] {
  const { dispatch, runtime } = engine;
  return [
    authRoutes,
    adminRoutes,
    appRoutes,
    scriptRoutes,
    (app, ctx) => authoringRoutes(app, ctx, { runDraft: runtime.runDraft }),
    routeRoutes,
    versionRoutes,
    dashboardRoutes,
    (app, ctx) => triggerRoutes(app, ctx, { retry: dispatch.settings.retry }),
    topicRoutes,
    secretRoutes,
    (app, ctx) => deadLetterRoutes(app, ctx, { outbox: dispatch.outbox }),
    (app, ctx) => emailRoutes(app, ctx, { outbox: dispatch.outbox }),
    (app, ctx) => realtimeRoutes(app, ctx, { hub: engine.realtime }),
    (app, ctx) => filesAdminRoutes(app, ctx, { events: dispatch.events }),
    (app, ctx) => executeRoutes(app, ctx, { invoke: runtime.invoke }),
    executionRoutes,
    executionStreamRoutes,
    (app, ctx) => dataBrowserRoutes(app, ctx, { sdk: runtime.sdk }),
    (app, ctx) => userRoutes(app, ctx, { invoke: runtime.invoke }),
  ];
}

/** Background work: started after the routes, stopped in reverse order on close. */
function workers(engine: Engine, ctx: PlatformContext): Worker[] {
  const { cron, retention, deadLetterSettler } = engine.dispatch.workers;
  return [
    { name: "realtime", start: () => engine.realtime.start(), stop: () => engine.realtime.stop() },
    { name: "cron", start: () => cron.start(), stop: () => cron.stop() },
    { name: "retention", start: () => retention.start(), stop: () => retention.stop() },
    {
      name: "dead-letter-settler",
      start: () => deadLetterSettler.start(),
      stop: () => deadLetterSettler.stop(),
    },
    dispatcherWorker(engine.runtime, ctx),
  ];
}

/** Builds the engine of one app instance from its context. */
async function buildEngine(ctx: PlatformContext, metrics: PlatformMetrics): Promise<Engine> {
  const { database, clock, logger, config } = ctx;
  // The dispatcher is built with the runtime, after the dispatch side that wakes it.
  let wakeDispatcher = () => {};
  let localRuns: LocalRuns | null = null;
  const dispatch = createDispatch({
    database,
    clock,
    logger,
    settings: triggerSettings(config),
    wake: () => wakeDispatcher(),
    local: () => localRuns,
  });
  const runtime = await createRuntime(ctx, { events: dispatch.events, failures: dispatch.failures });
  wakeDispatcher = () => runtime.dispatcher.wake();
  localRuns = runtime.dispatcher.local;
  metrics.registerPool({ busy: () => runtime.engine.busy, size: () => runtime.engine.size });
  const realtime = createRealtimeHub({ database, clock, logger });
  return { dispatch, runtime, realtime, metrics };
}

export interface AppDeps {
  logger: Logger;
  clock?: Clock;
  /** Also hears the generated bootstrap password lines (tests); the start-up banner prints them. */
  announce?: (line: string) => void;
}

export interface BuiltApp {
  app: FastifyInstance;
  ctx: PlatformContext;
  engine: Engine;
  /** Stops background work and closes the database; call after app.close(). */
  close(): Promise<void>;
  /** Start-up banner rows: where to log in, and the generated admin password on first start. */
  banner(url: string): [string, string][];
}

/** Build the script-platform app from a config object (tests build it in-process). */
export async function buildApp(config: Config, deps: AppDeps): Promise<BuiltApp> {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger;
  // Variables checked together (each alone is checked by envSpec): before anything is opened.
  subscriberTokenTtl(config);
  claimLease(config);
  const database = openDatabase<PlatformDB>({
    url: config.DATABASE_URL,
    sqliteFile: join(config.DATA_DIR, "platform.sqlite"),
    // The platform's named statements are key and id-list lookups whose generic plans match the
    // custom ones: re-planning the publish lookup on every run cost more than running it.
    planCacheMode: "auto",
    logger,
  });
  const started: Worker[] = [];
  let routeTable: ReturnType<typeof createRouteTable> | null = null;
  /** A runtime whose dispatcher worker has not started yet (that worker's stop closes it). */
  let unstartedRuntime: Runtime | null = null;
  const close = async () => {
    for (const w of started.reverse()) {
      try {
        await w.stop();
      } catch (err) {
        logger.error({ err, worker: w.name }, "worker stop failed");
      }
    }
    if (unstartedRuntime) {
      await unstartedRuntime.close();
      await unstartedRuntime.http.close();
    }
    await routeTable?.stop();
    await database.close();
  };
  const firstRun: string[] = [];
  try {
    await database.migrate(migrations);
    const master = loadMasterKey(config.PLATFORM_SECRET_KEY, config.DATA_DIR);
    if (master.generated)
      logger.warn(
        "PLATFORM_SECRET_KEY is unset: generated a master key into DATA_DIR/secret.key (set the variable in production)",
      );
    if (config.PLATFORM_HTTP_ALLOW_PRIVATE)
      logger.warn("PLATFORM_HTTP_ALLOW_PRIVATE is on: scripts may reach private networks (development only)");

    const auth = createAuth({ database, clock, sessionTtlHours: config.PLATFORM_SESSION_TTL_HOURS });
    await bootstrapAdmin({
      database,
      clock,
      logger,
      username: config.PLATFORM_ADMIN_USERNAME,
      password: config.PLATFORM_ADMIN_PASSWORD,
      // Printed once in the start-up banner, outside the structured log.
      announce: (line) => {
        firstRun.push(line);
        deps.announce?.(line);
      },
    });
    routeTable = createRouteTable(database, logger, clock);
    await routeTable.start();

    const app = createHttpApp({ logger, fastify: { trustProxy: fastifyTrustProxy(config.TRUST_PROXY) } });
    let listenUrl = `http://${config.HOST.includes(":") ? `[${config.HOST}]` : config.HOST}:${config.PORT}`;
    app.addHook("onListen", async () => {
      const addr = app.server.address();
      if (typeof addr === "object" && addr) listenUrl = listenUrl.replace(/:\d+$/, `:${addr.port}`);
    });
    const apps = appsRepo(database);
    const scripts = scriptsRepo(database);
    const ctx: PlatformContext = {
      config,
      clock,
      logger,
      database,
      paths: {
        dataDir: config.DATA_DIR,
        filesRoot: config.PLATFORM_FILES_ROOT ?? join(config.DATA_DIR, "files"),
      },
      secretBox: createSecretBox(master.key),
      routeTable,
      gate: createAdminGate(auth),
      apps: {
        resolve: (idOrSlug) => resolveApp(apps, idOrSlug),
        byId: (id) => apps.byId(id),
      },
      scripts: {
        byId: (id) => scripts.byId(id),
        byIds: (ids) => scripts.byIds(ids),
        byName: (appId, name) => scripts.byName(appId, name),
        modulesFor: (script) => scripts.modulesFor(script),
      },
      sandbox: createSandboxPolicy(config),
      publicBaseUrl: (req) => {
        const configured = config.PLATFORM_PUBLIC_URL ?? config.PUBLIC_BASE_URL;
        return req ? publicOrigin(req, configured) : (configured ?? listenUrl).replace(/\/+$/, "");
      },
    };

    registerHealth(app);
    registerReadiness(app, { database, migrations });
    // Before the route modules: every route is counted by its pattern.
    const metrics = registerPlatformMetrics(app, ctx);
    installAdminGate(app, ctx.gate);
    // Before any route module: the OpenAPI document and the auth hook see every route after.
    await registerApiDocs(app);
    installPlatformAuth(app, ctx);
    const engine = await buildEngine(ctx, metrics);
    unstartedRuntime = engine.runtime;
    for (const register of routeModules(engine)) await register(app, ctx);
    for (const w of workers(engine, ctx)) {
      if (w.name === "dispatcher") unstartedRuntime = null;
      await w.start();
      started.push(w);
    }
    const banner = (url: string): [string, string][] => [
      ["Dashboard", `${url}/admin/`],
      ...firstRun.map((line): [string, string] => ["Admin", line]),
    ];
    return { app, ctx, engine, close, banner };
  } catch (err) {
    await close().catch(() => {});
    throw err;
  }
}
