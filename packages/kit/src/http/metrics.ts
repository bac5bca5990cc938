import { monitorEventLoopDelay } from "node:perf_hooks";
import type { FastifyInstance } from "fastify";
import { Counter, Gauge, Histogram, Registry } from "prom-client";
import { z } from "zod";
import { envVar } from "../config.js";
import type { PoolStats } from "../db/database.js";
import { unauthorized } from "../errors.js";
import { UNMATCHED_ROUTE } from "./app.js";
import { matchSecret, presentedCredentials } from "./auth.js";

/** `METRICS_TOKEN`, the same in every service's env spec. */
export const metricsTokenEnv = () =>
  envVar(
    z.string().min(16, "must be at least 16 characters").optional(),
    "bearer token GET /metrics requires; unset → /metrics is open (scrape it on a private network only)",
    { secret: true, defaultText: "unset (open)" },
  );

export { UNMATCHED_ROUTE };

export interface MetricsOptions {
  /**
   * When set, `/metrics` answers only requests presenting this value (`Authorization: Bearer …`,
   * compared in constant time); unset means open, for a scraper on a private network.
   */
  token?: string | undefined;
  /** The database whose pool waits and availability are exported (optional: the bridge has none). */
  database?: { readonly poolStats: Readonly<PoolStats>; readonly outage?: { readonly down: boolean } };
  /**
   * `<name>_build_info{version, node}` = 1 (the common contract: `gallery`, `platform`, `bridge`),
   * so a dashboard can show and alert on what runs where.
   */
  build?: { name: string; version: string };
  /** Request latency buckets in seconds. */
  buckets?: number[];
}

type Labels = Record<string, string>;
/** What a gauge callback returns: one value, or one value per label set. */
export type GaugeReading = number | { labels: Labels; value: number }[];

export interface GaugeSpec {
  name: string;
  help: string;
  labelNames?: string[];
  /** Read live state when Prometheus scrapes (may be async: a count query). */
  collect: () => GaugeReading | Promise<GaugeReading>;
}

export interface AppMetrics {
  /** This app's own registry (never prom-client's global one: two apps in one process stay apart). */
  readonly registry: Registry;
  /**
   * Add a gauge read through `collect` at scrape time. A collect that throws makes that gauge
   * NaN (no samples when labelled) for that scrape instead of failing the whole page.
   */
  gauge(spec: GaugeSpec): void;
  /** A counter the caller increments (for events that leave no state to read). */
  counter(spec: { name: string; help: string; labelNames?: string[] }): Counter<string>;
}

const DEFAULT_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/**
 * `GET /metrics` in Prometheus text format: requests and latency by route pattern and status,
 * event-loop lag, process memory and CPU, database pool waits, plus the service's own gauges
 * (added with `gauge()`). Register it right after `createHttpApp`, before the routes.
 */
export function registerMetrics(app: FastifyInstance, opts: MetricsOptions = {}): AppMetrics {
  const registry = new Registry();
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status.",
    labelNames: ["method", "route", "status"],
    registers: [registry],
  });
  const duration = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request latency in seconds, by method, route pattern and status.",
    labelNames: ["method", "route", "status"],
    buckets: opts.buckets ?? DEFAULT_BUCKETS,
    registers: [registry],
  });
  // Callback style: an async hook costs a promise and its resolution turn on every request.
  app.addHook("onResponse", (req, reply, done) => {
    const labels = {
      method: req.method,
      route: req.routeOptions.url ?? UNMATCHED_ROUTE,
      status: String(reply.statusCode),
    };
    requests.inc(labels);
    duration.observe(labels, reply.elapsedTime / 1000);
    done();
  });

  const gauge = (spec: GaugeSpec) => {
    new Gauge({
      name: spec.name,
      help: spec.help,
      labelNames: spec.labelNames ?? [],
      registers: [registry],
      async collect() {
        this.reset();
        let reading: GaugeReading;
        try {
          reading = await spec.collect();
        } catch {
          // Unknown this time (e.g. the database is down): NaN, or no samples for a labelled gauge.
          if ((spec.labelNames ?? []).length === 0) this.set(Number.NaN);
          return;
        }
        if (typeof reading === "number") this.set(reading);
        else for (const r of reading) this.set(r.labels, r.value);
      },
    });
  };
  const counter = (spec: { name: string; help: string; labelNames?: string[] }) =>
    new Counter({ ...spec, labelNames: spec.labelNames ?? [], registers: [registry] });

  // Event-loop lag since the previous scrape (the monitor stops when the app closes).
  const lag = monitorEventLoopDelay({ resolution: 20 });
  lag.enable();
  app.addHook("onClose", async () => lag.disable());
  const lagStats = { mean: 0, p50: 0, p99: 0, max: 0 };
  gauge({
    name: "nodejs_eventloop_lag_seconds",
    help: "Event-loop delay since the previous scrape, by statistic (mean, p50, p99, max).",
    labelNames: ["stat"],
    collect: () => {
      const ns = (v: number) => (Number.isFinite(v) ? v / 1e9 : 0);
      Object.assign(lagStats, {
        mean: ns(lag.mean),
        p50: ns(lag.percentile(50)),
        p99: ns(lag.percentile(99)),
        max: ns(lag.max),
      });
      lag.reset();
      return Object.entries(lagStats).map(([stat, value]) => ({ labels: { stat }, value }));
    },
  });
  gauge({
    name: "process_memory_bytes",
    help: "Process memory by kind (rss, heap_total, heap_used, external, array_buffers).",
    labelNames: ["kind"],
    collect: () => {
      const m = process.memoryUsage();
      return [
        { labels: { kind: "rss" }, value: m.rss },
        { labels: { kind: "heap_total" }, value: m.heapTotal },
        { labels: { kind: "heap_used" }, value: m.heapUsed },
        { labels: { kind: "external" }, value: m.external },
        { labels: { kind: "array_buffers" }, value: m.arrayBuffers },
      ];
    },
  });
  // The names Prometheus' own client libraries use, so stock dashboards and alerts work.
  const startedAt = Math.floor(Date.now() / 1000 - process.uptime());
  gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since the Unix epoch, in seconds.",
    collect: () => startedAt,
  });
  gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    collect: () => process.memoryUsage.rss(),
  });
  if (opts.build) {
    const { name, version } = opts.build;
    gauge({
      name: `${name}_build_info`,
      help: `Version of this ${name} build (value is always 1).`,
      labelNames: ["version", "node"],
      collect: () => [{ labels: { version, node: process.version }, value: 1 }],
    });
  }
  new Counter({
    name: "process_cpu_seconds_total",
    help: "CPU time (user + system) used by the process.",
    registers: [registry],
    collect() {
      const u = process.cpuUsage();
      this.reset();
      this.inc((u.user + u.system) / 1e6);
    },
  });

  const db = opts.database;
  if (db) {
    const poolCounter = (name: string, help: string, read: (s: Readonly<PoolStats>) => number) =>
      new Counter({
        name,
        help,
        registers: [registry],
        collect() {
          this.reset();
          this.inc(read(db.poolStats));
        },
      });
    poolCounter(
      "db_pool_acquire_waits_total",
      "Database connection acquires that waited because every connection was taken.",
      (s) => s.waits,
    );
    poolCounter(
      "db_pool_acquire_wait_seconds_total",
      "Seconds spent waiting for a database connection.",
      (s) => s.waitSeconds,
    );
    poolCounter(
      "db_pool_acquire_timeouts_total",
      "Connection waits that gave up (answered 503 database_busy).",
      (s) => s.timeouts,
    );
    const outage = db.outage;
    if (outage)
      gauge({
        name: "db_up",
        help: "1 while the database answers, 0 during an outage (routes answer 503 database_unavailable).",
        collect: () => (outage.down ? 0 : 1),
      });
  }

  const token = opts.token === "" ? undefined : opts.token;
  app.get("/metrics", async (req, reply) => {
    if (token !== undefined && matchSecret(presentedCredentials(req.headers), [token]) < 0)
      throw unauthorized("A valid metrics token is required.");
    const text = await registry.metrics();
    return reply.type(registry.contentType).send(text);
  });

  return { registry, gauge, counter };
}
