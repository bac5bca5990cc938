import { systemClock } from "@app/kit/clock";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostCall, RunOutcome } from "../../src/sandbox/engine.js";
import { resolveLimits, SANDBOX_CEILINGS } from "../../src/sandbox/limits.js";
import { createEnginePool, type EnginePool, PIPELINE_DEPTH, type PoolRun } from "../../src/sandbox/pool.js";
import { type Harness, startHarness } from "../control/harness.js";
import { until } from "./turns.js";

/**
 * Pipelining (sandbox/pool.ts): runs of an app at its cap are handed on to the worker running
 * that app, which starts each the moment the previous one ends or parks. The pool's guarantees
 * stand: the cap counts runs executing at once (runs parked on SDK calls may overlap), a handed-on run keeps its wait bound (busy), other apps'
 * runs are not overtaken, and runs held by a worker that is killed run elsewhere.
 */
describe("worker pool pipelining", () => {
  let pool: EnginePool;
  const log = captureLogger();
  /** Two SDK calls per run ("enter", "leave"); each samples the runs the pool has executing. */
  const TRACKED = `export default async function (ctx) {
    const c = kv.collection("c");
    await c.get("enter:" + ctx.app);
    await c.get("leave:" + ctx.app);
    return ctx.n;
  }`;
  const inRun = new Map<string, number>();
  const maxInRun = new Map<string, number>();
  /** Most runs executing at once seen by an SDK call (the cases run one app at a time). */
  let maxBusy = 0;
  const tracking: HostCall = async (_op, args) => {
    maxBusy = Math.max(maxBusy, pool.busy);
    const [what, app] = String(args[1]).split(":") as [string, string];
    if (what === "enter") {
      inRun.set(app, (inRun.get(app) ?? 0) + 1);
      maxInRun.set(app, Math.max(maxInRun.get(app) ?? 0, inRun.get(app) ?? 0));
      // real-time: lets other runs reach their own "enter" meanwhile, if the pool let them run
      // (they run in worker threads; the maximum counted is checked, whatever this wait's length).
      await new Promise((r) => setTimeout(r, 2));
    } else inRun.set(app, (inRun.get(app) ?? 0) - 1);
    return null;
  };
  /**
   * Runs that hold their worker for ctx.ms: a run waiting on an SDK call or a timer parks and
   * leaves its worker to others, so only executing JavaScript holds one.
   */
  const HOLDING = `export default function (ctx) { const end = Date.now() + ctx.ms; while (Date.now() < end) {} return ctx.n; }`;
  const holding = (ms: number): Partial<PoolRun> => ({
    source: HOLDING,
    ctx: { n: 1, ms },
    limits: resolveLimits({ max_operations: 1e12 }, 60, { ...SANDBOX_CEILINGS, max_operations: 1e12 }),
  });
  const STUCK = `export default function () { const h = "a".repeat(1000000); return h.indexOf("a".repeat(500000) + "b"); }`;

  const run = (appId: string, n: number, over: Partial<PoolRun> = {}): Promise<RunOutcome> =>
    pool.run({
      appId,
      key: `${appId}/tracked`,
      name: "main",
      source: TRACKED,
      modules: new Map(),
      ctx: { app: appId, n },
      limits: resolveLimits({}, 10),
      host: tracking,
      ...over,
    });

  beforeAll(async () => {
    pool = await createEnginePool({
      workers: 2,
      appConcurrency: 1,
      sdkCallsInFlight: 8,
      sdkCallsPerRun: 100,
      clock: systemClock,
      logger: log.logger,
    });
    await pool.ready();
  }, 60_000);
  afterAll(async () => {
    await pool?.close();
  });

  it("hands one app's waiting runs to its worker, keeps them serial, and answers each run", async () => {
    const handedBefore = pool.stats.handedOn;
    const outcomes = await Promise.all(Array.from({ length: 40 }, (_, n) => run("a", n)));
    expect(outcomes.map((o) => (o.ok ? o.value : o.kind))).toEqual(Array.from({ length: 40 }, (_, n) => n));
    expect(maxInRun.get("a")).toBeGreaterThanOrEqual(1);
    expect(maxBusy).toBe(1);
    expect(pool.stats.handedOn - handedBefore).toBeGreaterThan(0);
    expect(pool.stats.replaced).toBe(0);
    expect([pool.busy, pool.waiting]).toEqual([0, 0]);
  });

  it("withdraws a handed-on run whose wait bound passes before it starts: busy, worker kept", async () => {
    const first = run("b", 1, { key: "b/block", ...holding(1500) });
    await until(() => pool.busy === 1);
    const handedBefore = pool.stats.handedOn;
    const t = performance.now();
    const second = await run("b", 2, { waitMs: 150 });
    expect(pool.stats.handedOn - handedBefore).toBe(1);
    expect(second).toMatchObject({ ok: false, kind: "busy" });
    expect(performance.now() - t).toBeGreaterThanOrEqual(140);
    expect(pool.waiting).toBe(0);
    expect(await first).toMatchObject({ ok: true, value: 1 });
    // The withdrawn run never started, and the worker serves the app's next run.
    expect(await run("b", 3)).toMatchObject({ ok: true, value: 3 });
    expect(pool.stats.replaced).toBe(0);
  });

  it("never starts a withdrawn run whose cell a later run reuses", async () => {
    const replacedBefore = pool.stats.replaced;
    const first = run("c", 0, { key: "c/block", ...holding(4000) });
    await until(() => pool.busy === 1);
    // Waves of handed-on runs withdrawn while the worker is busy: they stay in its queue while
    // their cells go round and are handed to later runs.
    for (let wave = 0; wave < 9; wave++) {
      const outs = await Promise.all(
        Array.from({ length: PIPELINE_DEPTH }, (_, n) => run("c", n, { waitMs: 20 })),
      );
      expect(outs.every((o) => !o.ok && o.kind === "busy")).toBe(true);
    }
    const later = run("c", 99);
    expect(await first).toMatchObject({ ok: true, value: 1 });
    expect(await later).toMatchObject({ ok: true, value: 99 });
    expect(pool.stats.replaced).toBe(replacedBefore);
  });

  it("hands nothing on past a run of another app that waits for a worker", async () => {
    const x1 = run("x", 1, { key: "x/block", ...holding(1500) });
    const y1 = run("y", 1, { key: "y/block", ...holding(1500) });
    await until(() => pool.busy === 2);
    const handedBefore = pool.stats.handedOn;
    const z1 = run("z", 1); // no worker free: waits in the queue
    const x2 = run("x", 2); // behind z1: must not be handed on to x's worker
    expect(pool.stats.handedOn).toBe(handedBefore);
    expect(pool.waiting).toBe(2);
    const all = await Promise.all([x1, y1, z1, x2]);
    expect(all.map((o) => o.ok && o.value)).toEqual([1, 1, 1, 2]);
  });

  it("runs the handed-on runs of a worker the watchdog killed elsewhere, once each", async () => {
    const replacedBefore = pool.stats.replaced;
    maxBusy = 0;
    const stuck = run("s", 0, { key: "s/stuck", source: STUCK, limits: resolveLimits({}, 0.3) });
    await until(() => pool.busy === 1);
    const after = Array.from({ length: Math.min(5, PIPELINE_DEPTH) }, (_, n) => run("s", n + 1));
    expect(await stuck).toMatchObject({ ok: false, kind: "timeout" });
    const outcomes = await Promise.all(after);
    expect(outcomes.map((o) => o.ok && o.value)).toEqual([1, 2, 3, 4, 5]);
    expect(pool.stats.replaced).toBe(replacedBefore + 1);
    expect(maxBusy).toBe(1);
    await pool.ready();
  });
});

/** The same through HTTP and the sync path (inbox + outbox row per request), on the run's backend. */
describe("sync requests of one app pipelined through its worker", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({
      PLATFORM_WORKERS: "2",
      PLATFORM_APP_CONCURRENCY: "1",
      PLATFORM_MAX_CONCURRENCY: "64",
    });
    const appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "piped" })).json().id as string;
    await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "piped.test" });
    const s = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name: "echo",
      kind: "endpoint",
      source: "export default (ctx) => ({ n: ctx.request.query.n })",
    });
    await h.call("POST", `/api/v1/admin/scripts/${s.json().id}/routes`, { path: "/echo", method: "GET" });
    await h.built.engine.runtime.engine.ready();
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  it("answers every request with its own result, records each run, and leaves no outbox row", async () => {
    const { engine, dispatcher } = h.built.engine.runtime;
    const handedBefore = engine.stats.handedOn;
    const res = await Promise.all(
      Array.from({ length: 30 }, (_, n) =>
        h.built.app.inject({ method: "GET", url: `/echo?n=${n}`, headers: { host: "piped.test" } }),
      ),
    );
    expect(res.map((r) => [r.statusCode, r.json().n])).toEqual(
      Array.from({ length: 30 }, (_, n) => [200, String(n)]),
    );
    expect(engine.stats.handedOn - handedBefore).toBeGreaterThan(0);
    await dispatcher.idle();
    const db = h.built.ctx.database.db;
    const left = await db
      .selectFrom("outbox")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirst();
    expect(Number(left?.n)).toBe(0);
    const ran = await db
      .selectFrom("executions")
      .where("status", "=", "succeeded")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .executeTakeFirst();
    expect(Number(ran?.n)).toBeGreaterThanOrEqual(30);
  });
});
