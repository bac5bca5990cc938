import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Clock } from "@app/kit/clock";
import { systemClock } from "@app/kit/clock";
import { openDatabase } from "@app/kit/db";
import { createHttpApp, registerHealth } from "@app/kit/http";
import { fastifyTrustProxy } from "@app/kit/http/proxy";
import { registerReadiness } from "@app/kit/http/readiness";
import type { Logger } from "@app/kit/logger";
import type { FastifyInstance } from "fastify";
import { createAuth } from "./auth/auth.js";
import { loadJwtSecret } from "./auth/secret.js";
import { createSessionTokens } from "./auth/sessions.js";
import { createBrandingService } from "./branding/service.js";
import type { Config } from "./config.js";
import type { AuthedUser, BackgroundWorker, DiskProbe, GalleryContext } from "./context.js";
import { migrations } from "./db/migrations/index.js";
import type { GalleryDB } from "./db/schema.js";
import { createDerivativeWorker } from "./derivatives/worker.js";
import { createDiskProbe } from "./disk/probe.js";
import { ensureEventRow } from "./event/state.js";
import { createKeepsakeBuilder } from "./export/builder.js";
import { createKeepsakeService } from "./export/keepsake.js";
import { createDownloadTickets } from "./export/tickets.js";
import { createEventTransitions } from "./export/transitions.js";
import { createExportWorker } from "./export/worker.js";
import { createFavoritesService } from "./favorites/service.js";
import { createFeedService } from "./feed/feed.js";
import { createGuestbookService } from "./guestbook/service.js";
import { registerApiDocs } from "./http/api-docs.js";
import { registerGalleryMetrics } from "./http/metrics.js";
import { checkMultipartBoundaries } from "./http/multipart-boundary.js";
import { installGalleryAuth } from "./http/route-auth.js";
import { registerAdminRoutes } from "./http/routes/admin.js";
import { registerBrandingRoutes } from "./http/routes/branding.js";
import { registerEventRoutes } from "./http/routes/event.js";
import { registerExportRoutes } from "./http/routes/export.js";
import { registerFavoritesRoutes } from "./http/routes/favorites.js";
import { registerFeedRoutes } from "./http/routes/feed.js";
import { registerGuestbookRoutes } from "./http/routes/guestbook.js";
import { registerHostRoutes } from "./http/routes/host.js";
import { registerIdentityRoutes } from "./http/routes/identity.js";
import { registerMeRoutes } from "./http/routes/me.js";
import { registerMediaPathGuard, registerMediaRoutes } from "./http/routes/media.js";
import { registerPremoderationRoutes } from "./http/routes/premoderation.js";
import { registerPushRoutes } from "./http/routes/push.js";
import { registerResumableRoutes } from "./http/routes/resumable.js";
import { registerSocialRoutes } from "./http/routes/social.js";
import { registerStreamRoutes } from "./http/routes/stream.js";
import { registerUploadRoutes } from "./http/routes/uploads.js";
import { registerWebApp } from "./http/routes/web.js";
import { ensureAdmin } from "./identity/admin.js";
import { NameRules } from "./identity/names.js";
import { createIdentityService } from "./identity/service.js";
import { createLimiterFor } from "./limits/limiter.js";
import { isMediaPath } from "./media/guard.js";
import { createMediaFiles } from "./media/serve.js";
import { createModerationService } from "./moderation/service.js";
import { type EndpointRule, publicHttpsOnly } from "./notify/endpoint.js";
import { createHostNotifier, vapidSubject } from "./notify/service.js";
import { loadVapidKeys } from "./notify/vapid.js";
import { announceUpload } from "./premoderation/rules.js";
import { createPremoderationService } from "./premoderation/service.js";
import { createEventBus } from "./realtime/bus.js";
import { createStreamHub } from "./realtime/hub.js";
import { createStreamTickets } from "./realtime/tickets.js";
import { createSettingsStore } from "./settings/store.js";
import { createSocialService } from "./social/service.js";
import { createIngest } from "./uploads/ingest.js";
import { createUploadManager } from "./uploads/manage.js";
import { createResumableUploads } from "./uploads/resumable.js";
import { createUploadSweeper } from "./uploads/sweep.js";
import { newOwnerId, renewOwner } from "./uploads/temp-owners.js";

export interface AppDeps {
  logger: Logger;
  clock?: Clock;
  /** Replaces the statfs probe on DATA_DIR (tests inject fixed numbers). */
  disk?: DiskProbe;
  /** Database pool wait before 503 (tests shorten it). */
  acquireTimeoutMs?: number;
  /** PostgreSQL pool size (default 10). */
  poolSize?: number;
  /** Which push endpoints may be called (default: https to a named host; tests allow loopback). */
  pushEndpointAllowed?: EndpointRule;
}

export interface BuiltApp {
  app: FastifyInstance;
  ctx: GalleryContext;
  /** Starts background workers now (done automatically once the server listens); idempotent. */
  startWorkers(): void;
  /** Stops background work and closes the database; call after app.close(). */
  close(): Promise<void>;
  /** Start-up banner rows: where guests join, where the admin logs in, a generated password. */
  banner(url: string): [string, string][];
}

/** Build the event-gallery app from a config object (tests build it in-process). */
export async function buildApp(config: Config, deps: AppDeps): Promise<BuiltApp> {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger;
  const dataDir = config.DATA_DIR;
  const paths = { dataDir, mediaDir: join(dataDir, "media"), exportsDir: join(dataDir, "exports") };
  await mkdir(paths.mediaDir, { recursive: true });
  await mkdir(paths.exportsDir, { recursive: true });

  const database = openDatabase<GalleryDB>({
    url: config.DATABASE_URL,
    sqliteFile: join(dataDir, "gallery.sqlite"),
    logger,
    ...(deps.acquireTimeoutMs !== undefined ? { acquireTimeoutMs: deps.acquireTimeoutMs } : {}),
    ...(deps.poolSize !== undefined ? { poolSize: deps.poolSize } : {}),
  });
  let workers: BackgroundWorker[] = [];
  try {
    await database.migrate(migrations);
    await ensureEventRow(database.db, clock);
    const tokens = createSessionTokens({
      key: await loadJwtSecret(dataDir, config.GALLERY_JWT_SECRET),
      clock,
    });
    const settings = await createSettingsStore({ database, clock });
    const bus = await createEventBus({ logger, database });
    const limiter = createLimiterFor({ database, clock });
    const notifier = createHostNotifier({
      database,
      clock,
      logger,
      limiter,
      keys: await loadVapidKeys(dataDir),
      allowEndpoint: deps.pushEndpointAllowed ?? publicHttpsOnly,
      subject: vapidSubject(config.GALLERY_PUBLIC_URL),
      ...(config.GALLERY_NOTIFY_WEBHOOK_URL
        ? {
            webhook: { url: config.GALLERY_NOTIFY_WEBHOOK_URL, format: config.GALLERY_NOTIFY_WEBHOOK_FORMAT },
          }
        : {}),
    });
    const ctx: GalleryContext = {
      config,
      clock,
      logger,
      database,
      paths,
      settings,
      auth: createAuth({ database, tokens, clock }),
      limiter,
      bus,
      disk: deps.disk ?? createDiskProbe(dataDir),
      tempOwner: newOwnerId(),
      notify: notifier,
    };
    // Owned before the first request can write a temp file; the upload sweeper renews it.
    await renewOwner(dataDir, ctx.tempOwner, clock.now());

    const admin = await ensureAdmin(ctx);
    const identity = createIdentityService({
      ...ctx,
      names: new NameRules(config.GALLERY_ADMIN_NAME),
      tokens,
    });
    const hub = createStreamHub(ctx);
    const tickets = createStreamTickets({ db: database.db, clock });

    const branding = createBrandingService(ctx);
    const exportWorker = createExportWorker({ ...ctx, builder: createKeepsakeBuilder({ ...ctx, branding }) });
    const transitions = createEventTransitions({
      ...ctx,
      effects: { jobsArmed: () => exportWorker.kick(), releaseWithdrawn: () => exportWorker.pruneArchives() },
    });
    const keepsake = createKeepsakeService({
      ...ctx,
      tickets: createDownloadTickets({ db: database.db, clock }),
    });
    const announce = (id: string, user: AuthedUser) => announceUpload(ctx, id, user);
    const ingest = createIngest({ ...ctx, announce });

    const app = createHttpApp({
      logger,
      badUrlIsNotFound: isMediaPath,
      fastify: { trustProxy: fastifyTrustProxy(config.TRUST_PROXY) },
    });
    // Before any route: the OpenAPI document and the auth hook see every route registered after.
    await registerApiDocs(app);
    installGalleryAuth(app, ctx);
    checkMultipartBoundaries(app);
    registerHealth(app);
    registerReadiness(app, { database, migrations });
    registerGalleryMetrics(app, ctx, { sseClients: () => hub.size() });
    registerMediaPathGuard(app);
    await registerWebApp(app);
    // One line per route module: `registerXRoutes(api, ctx)` adds its paths under /api/v1.
    await app.register(
      async (api) => {
        registerIdentityRoutes(api, ctx, identity);
        registerMeRoutes(api, ctx);
        registerSocialRoutes(api, ctx, createSocialService(ctx));
        const moderation = createModerationService(ctx);
        registerHostRoutes(api, ctx, moderation);
        const premoderation = createPremoderationService({ ...ctx, moderation });
        registerPremoderationRoutes(api, ctx, premoderation);
        registerBrandingRoutes(api, ctx, branding);
        registerGuestbookRoutes(api, ctx, createGuestbookService(ctx));
        registerPushRoutes(api, notifier);
        registerAdminRoutes(api, ctx, settings);
        registerStreamRoutes(api, ctx, { tickets, hub, tokens });
        registerUploadRoutes(api, ctx, { ingest, manager: createUploadManager(ctx) });
        registerResumableRoutes(api, ctx, createResumableUploads({ ...ctx, ingest, announce }));
        registerMediaRoutes(api, ctx, createMediaFiles(ctx));
        const favorites = createFavoritesService(ctx);
        registerFavoritesRoutes(api, ctx, favorites);
        registerFeedRoutes(api, ctx, { feed: createFeedService(ctx), favorites, premoderation });
        registerEventRoutes(api, ctx, transitions);
        registerExportRoutes(api, ctx, keepsake, exportWorker);
      },
      { prefix: "/api/v1" },
    );

    // One entry per background worker: `createXWorker(deps)` returning a BackgroundWorker.
    workers = [exportWorker, createDerivativeWorker(ctx), createUploadSweeper(ctx), notifier.worker()];
    let started = false;
    const startWorkers = () => {
      if (started) return;
      started = true;
      for (const w of workers) w.start();
    };
    app.addHook("onListen", async () => startWorkers());
    // Open SSE streams would otherwise keep app.close() waiting forever.
    app.addHook("preClose", async () => hub.close());

    return {
      app,
      ctx,
      startWorkers,
      banner: (url) => {
        const base = config.GALLERY_PUBLIC_URL ?? url;
        const rows: [string, string][] = [
          ["Guests join", `${base}/`],
          ["Admin login", `${base}/admin as "${admin.name}"`],
        ];
        if (admin.generatedPassword)
          rows.push([
            "Admin password",
            `${admin.generatedPassword} (generated, shown only this once; set GALLERY_ADMIN_PASSWORD to choose one)`,
          ]);
        return rows;
      },
      close: async () => {
        hub.close();
        await bus.close();
        await settings.close();
        for (const w of workers)
          await w.stop().catch((err) => logger.error({ err, worker: w.name }, "worker stop failed"));
        await database.close();
      },
    };
  } catch (err) {
    await database.close().catch(() => {});
    throw err;
  }
}
