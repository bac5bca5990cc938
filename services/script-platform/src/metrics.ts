import { type GaugeSpec, registerMetrics } from "@app/kit/http/metrics";
import type { FastifyInstance } from "fastify";
import type { PlatformContext } from "./context.js";
import { executionsByStatus, outboxDepth, unresolvedDeadLetters } from "./metrics-repository.js";
import { PRODUCT_VERSION } from "./version.js";

/** Live state of the sandbox worker pool, read at scrape time. */
export interface PoolGauges {
  /** Workers running a script right now. */
  busy: () => number;
  /** Workers in the pool. */
  size: () => number;
}

export interface PlatformMetrics {
  /** Add another gauge read at scrape time (e.g. the worker pool, once it exists). */
  gauge(spec: GaugeSpec): void;
  /** Register the worker pool's busy/size gauges. */
  registerPool(pool: PoolGauges): void;
}

/**
 * `GET /metrics` for the platform: the kit's HTTP, process and pool metrics plus runs by
 * outcome, outbox depth and unresolved dead letters, each read when Prometheus scrapes.
 * Register before the route modules so every route is counted by its pattern.
 */
export function registerPlatformMetrics(
  app: FastifyInstance,
  ctx: Pick<PlatformContext, "config" | "database">,
): PlatformMetrics {
  const metrics = registerMetrics(app, {
    token: ctx.config.METRICS_TOKEN,
    database: ctx.database,
    build: { name: "platform", version: PRODUCT_VERSION },
  });
  const db = ctx.database.reader;
  metrics.gauge({
    name: "platform_executions",
    help: "Script runs in the executions history (within retention), by outcome.",
    labelNames: ["outcome"],
    collect: async () =>
      (await executionsByStatus(db)).map((r) => ({ labels: { outcome: r.status }, value: r.n })),
  });
  metrics.gauge({
    name: "platform_outbox_depth",
    help: "Trigger deliveries waiting in the outbox (due now or later).",
    collect: () => outboxDepth(db),
  });
  metrics.gauge({
    name: "platform_dead_letters_unresolved",
    help: "Dead letters not yet resolved.",
    collect: () => unresolvedDeadLetters(db),
  });
  return {
    gauge: metrics.gauge,
    registerPool: (pool) => {
      metrics.gauge({
        name: "platform_worker_pool_busy",
        help: "Sandbox workers running a script right now.",
        collect: pool.busy,
      });
      metrics.gauge({
        name: "platform_worker_pool_size",
        help: "Sandbox workers in the pool.",
        collect: pool.size,
      });
    },
  };
}
