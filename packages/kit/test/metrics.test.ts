import { afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, testBackend } from "../src/db/testing.js";
import type { Migration } from "../src/db.js";
import { createHttpApp } from "../src/http/app.js";
import { registerMetrics, UNMATCHED_ROUTE } from "../src/http/metrics.js";
import { captureLogger } from "../src/logger.js";
import { parsePrometheus, sampleValue } from "../src/testing/metrics.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function newApp(opts: Parameters<typeof registerMetrics>[1] = {}) {
  const app = createHttpApp({ logger: captureLogger().logger });
  const metrics = registerMetrics(app, opts);
  app.get("/items/:id", async (req) => ({ id: (req.params as { id: string }).id }));
  app.get("/fail", async () => {
    throw new Error("boom");
  });
  cleanups.push(() => app.close());
  return { app, metrics };
}

async function scrape(app: ReturnType<typeof newApp>["app"], headers: Record<string, string> = {}) {
  const res = await app.inject({ method: "GET", url: "/metrics", headers });
  expect(res.statusCode).toBe(200);
  expect(res.headers["content-type"]).toMatch(/^text\/plain; version=0\.0\.4/);
  return { text: res.body, samples: parsePrometheus(res.body) };
}

describe("GET /metrics", () => {
  it("counts requests and latency by route pattern and status, never by raw path", async () => {
    const { app } = newApp();
    for (const id of ["0198c5e2-aaaa-7bbb-8ccc-123456789abc", "secret-looking-id"])
      expect((await app.inject({ method: "GET", url: `/items/${id}?token=tok123` })).statusCode).toBe(200);
    expect((await app.inject({ method: "GET", url: "/fail" })).statusCode).toBe(500);
    expect((await app.inject({ method: "GET", url: "/nowhere/hidden-path-value" })).statusCode).toBe(404);

    const { text, samples } = await scrape(app);
    const route = (r: string, status: string) =>
      sampleValue(samples, "http_requests_total", { method: "GET", route: r, status });
    expect(route("/items/:id", "200")).toBe(2);
    expect(route("/fail", "500")).toBe(1);
    expect(route(UNMATCHED_ROUTE, "404")).toBe(1);
    expect(
      sampleValue(samples, "http_request_duration_seconds_count", { route: "/items/:id", status: "200" }),
    ).toBe(2);
    expect(
      sampleValue(samples, "http_request_duration_seconds_bucket", { route: "/items/:id", le: "+Inf" }),
    ).toBe(2);
    for (const raw of ["0198c5e2", "secret-looking-id", "hidden-path-value", "tok123", "nowhere"])
      expect(text).not.toContain(raw);
    // A second scrape sees the first one counted under its own pattern.
    const again = await scrape(app);
    expect(sampleValue(again.samples, "http_requests_total", { route: "/metrics", status: "200" })).toBe(1);
  });

  it("exports event-loop lag, process memory and CPU", async () => {
    const { app } = newApp();
    const { samples } = await scrape(app);
    expect(sampleValue(samples, "nodejs_eventloop_lag_seconds", { stat: "p99" })).toBeGreaterThanOrEqual(0);
    expect(sampleValue(samples, "process_memory_bytes", { kind: "rss" })).toBeGreaterThan(1024 * 1024);
    expect(sampleValue(samples, "process_memory_bytes", { kind: "heap_used" })).toBeGreaterThan(0);
    expect(sampleValue(samples, "process_cpu_seconds_total")).toBeGreaterThan(0);
  });

  it("keeps two apps in one process apart (one registry per app)", async () => {
    const a = newApp();
    const b = newApp();
    await a.app.inject({ method: "GET", url: "/items/1" });
    await a.app.inject({ method: "GET", url: "/items/2" });
    await b.app.inject({ method: "GET", url: "/items/3" });
    expect(sampleValue((await scrape(a.app)).samples, "http_requests_total", { route: "/items/:id" })).toBe(
      2,
    );
    expect(sampleValue((await scrape(b.app)).samples, "http_requests_total", { route: "/items/:id" })).toBe(
      1,
    );
  });

  it("reads service gauges live through their callbacks; a failing callback makes only that gauge NaN", async () => {
    const { app, metrics } = newApp();
    let clients = 3;
    metrics.gauge({ name: "svc_clients", help: "Clients.", collect: () => clients });
    metrics.gauge({
      name: "svc_jobs",
      help: "Jobs by state.",
      labelNames: ["state"],
      collect: async () => [
        { labels: { state: "running" }, value: clients * 2 },
        { labels: { state: "failed" }, value: 1 },
      ],
    });
    metrics.gauge({
      name: "svc_broken",
      help: "Always fails.",
      collect: () => {
        throw new Error("db down");
      },
    });
    let s = (await scrape(app)).samples;
    expect(sampleValue(s, "svc_clients")).toBe(3);
    expect(sampleValue(s, "svc_jobs", { state: "running" })).toBe(6);
    expect(sampleValue(s, "svc_broken")).toBeNaN();
    clients = 5;
    s = (await scrape(app)).samples;
    expect(sampleValue(s, "svc_clients")).toBe(5);
    expect(sampleValue(s, "svc_jobs", { state: "running" })).toBe(10);
  });

  it("requires METRICS_TOKEN when set (constant-time match), in the common error shape", async () => {
    const { app } = newApp({ token: "metrics-secret-1" });
    const none = await app.inject({ method: "GET", url: "/metrics" });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ error: { code: "unauthorized", message: expect.any(String) } });
    const wrong = await app.inject({
      method: "GET",
      url: "/metrics",
      headers: { authorization: "Bearer metrics-secret-2" },
    });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.body).not.toContain("metrics-secret");
    const { samples } = await scrape(app, { authorization: "Bearer metrics-secret-1" });
    // The refused scrapes were counted too, under the route pattern.
    expect(sampleValue(samples, "http_requests_total", { route: "/metrics", status: "401" })).toBe(2);
  });

  it("is open when the token is unset or empty", async () => {
    await scrape(newApp({ token: "" }).app);
    await scrape(newApp({ token: undefined }).app);
  });
});

const m1: Migration = { version: 1, name: "items", sql: "CREATE TABLE items (id TEXT PRIMARY KEY);" };

describe(`database pool waits on ${testBackend()}`, () => {
  it("counts acquire waits, their time and the waits that gave up with 503", async () => {
    // Generous timeout: on PostgreSQL it also bounds opening the connection on a loaded machine.
    const t = await createTestDatabase<{ items: { id: string } }>([m1], {
      acquireTimeoutMs: 1500,
      poolSize: 1,
    });
    cleanups.push(t.cleanup);
    const { database } = t;
    const { app } = newApp({ database });
    const read = async () => (await scrape(app)).samples;
    expect(sampleValue(await read(), "db_pool_acquire_waits_total")).toBe(0);
    // The pool's one connection exists and is idle: taking it is not a wait.
    await database.db.selectFrom("items").selectAll().execute();
    expect(sampleValue(await read(), "db_pool_acquire_waits_total")).toBe(0);

    // Hold the one connection: a second query waits past the timeout (503 database_busy)...
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inTx = new Promise<void>((r) => (entered = r));
    const holder = database.writeTx(async () => {
      entered();
      await released;
    });
    await inTx;
    await expect(database.db.selectFrom("items").selectAll().execute()).rejects.toMatchObject({
      status: 503,
      code: "database_busy",
    });
    // ...and a third waits until the holder lets go, then succeeds.
    const waiting = database.db.selectFrom("items").selectAll().execute();
    await new Promise((r) => setImmediate(r));
    release();
    await holder;
    await waiting;

    const s = await read();
    expect(sampleValue(s, "db_pool_acquire_timeouts_total")).toBe(1);
    expect(sampleValue(s, "db_pool_acquire_waits_total")).toBe(2);
    expect(sampleValue(s, "db_pool_acquire_wait_seconds_total")).toBeGreaterThanOrEqual(1.4);
  });
});

describe("standard process and build metrics", () => {
  it("exports process_start_time_seconds, process_resident_memory_bytes, <name>_build_info and db_up", async () => {
    const outage = { down: false };
    const { app } = newApp({
      build: { name: "gallery", version: "9.8.7" },
      database: { poolStats: { waits: 0, waitSeconds: 0, timeouts: 0 }, outage },
    });
    let { samples } = await scrape(app);
    const start = sampleValue(samples, "process_start_time_seconds", {}) ?? 0;
    expect(Math.abs(start - (Date.now() / 1000 - process.uptime()))).toBeLessThan(2);
    expect(sampleValue(samples, "process_resident_memory_bytes", {})).toBeGreaterThan(1e6);
    expect(sampleValue(samples, "gallery_build_info", { version: "9.8.7", node: process.version })).toBe(1);
    expect(sampleValue(samples, "db_up", {})).toBe(1);
    outage.down = true;
    ({ samples } = await scrape(app));
    expect(sampleValue(samples, "db_up", {})).toBe(0);
  });
});
