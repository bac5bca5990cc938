import { systemClock } from "@app/kit/clock";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostCall, RunOutcome } from "../../src/sandbox/engine.js";
import { resolveLimits } from "../../src/sandbox/limits.js";
import { createEnginePool, type EnginePool, type PoolRun } from "../../src/sandbox/pool.js";
import { until } from "./turns.js";

/**
 * A run of an app below its cap that finds no idle worker while one is still loading (at start,
 * or a replacement) waits for that worker: it is not handed on behind its app's running run, which
 * may block for as long as it likes (sync-batching.test.ts: three held requests, the second and
 * third handed on behind the first because only one worker had loaded yet, never got to run).
 */
describe("worker pool: a loading worker is waited for, not pipelined around", () => {
  let pool: EnginePool;
  const log = captureLogger();
  const blocked: (() => void)[] = [];
  const BLOCKING = `export default async function (ctx) { await kv.collection("c").get("block"); return ctx.n; }`;
  const blocking: HostCall = () => new Promise((r) => blocked.push(() => r(null)));
  const STUCK = `export default function () { const h = "a".repeat(1000000); return h.indexOf("a".repeat(500000) + "b"); }`;
  const run = (appId: string, n: number, over: Partial<PoolRun> = {}): Promise<RunOutcome> =>
    pool.run({
      appId,
      key: `${appId}/block`,
      name: "main",
      source: BLOCKING,
      modules: new Map(),
      ctx: { n },
      limits: resolveLimits({}, 30),
      host: blocking,
      ...over,
    });

  beforeAll(async () => {
    pool = await createEnginePool({
      workers: 2,
      appConcurrency: 2,
      sdkCallsInFlight: 8,
      sdkCallsPerRun: 100,
      clock: systemClock,
      logger: log.logger,
    });
    await pool.ready();
  }, 60_000);
  afterAll(async () => {
    for (const release of blocked.splice(0)) release();
    await pool?.close();
  });

  it("the app's second run starts while its first still blocks, never handed on behind it", async () => {
    const first = run("a", 1);
    await until(() => blocked.length === 1);
    // The other worker gets stuck in one native call: the watchdog ends the run and starts a
    // replacement, which is still loading when the outcome arrives.
    const stuck = await run("s", 0, { key: "s/stuck", source: STUCK, limits: resolveLimits({}, 0.3) });
    expect(stuck).toMatchObject({ ok: false, kind: "timeout" });
    expect(pool.stats.replaced).toBe(1);
    const handedBefore = pool.stats.handedOn;
    // A generous wait bound: behind the blocked first run it would pass and fail the run as busy.
    const second = run("a", 2, { waitMs: 20_000 });
    expect(pool.stats.handedOn).toBe(handedBefore);
    await Promise.race([
      until(() => blocked.length === 2),
      second.then((o) => {
        throw new Error(`the second run ended before it started: ${JSON.stringify(o)}`);
      }),
    ]);
    // Both wait on their SDK calls, parked (a parked run leaves its worker to its app's next run).
    // The worker's "parked" notice is its own message and may arrive after the SDK call itself.
    await until(() => pool.parked === 2);
    expect(pool.parked).toBe(2);
    for (const release of blocked.splice(0)) release();
    expect(await Promise.all([first, second])).toMatchObject([
      { ok: true, value: 1 },
      { ok: true, value: 2 },
    ]);
  });
});
