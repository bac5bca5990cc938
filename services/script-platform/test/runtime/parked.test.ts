import { systemClock } from "@app/kit/clock";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HostCall, RunOutcome } from "../../src/sandbox/engine.js";
import { resolveLimits } from "../../src/sandbox/limits.js";
import { createEnginePool, type EnginePool, type PoolRun } from "../../src/sandbox/pool.js";

/**
 * Parked runs (sandbox/pool.ts, worker.ts): a run waiting on an SDK call leaves its worker to
 * other runs of its app, each in a context of its own; the cap counts runs executing JavaScript.
 */
describe("parked runs share a worker", () => {
  let pool: EnginePool;
  const log = captureLogger();
  /** The SDK call of each run waits until the test releases it: all runs must be in it at once. */
  const WAITING = `let shared = 0;
  export default async function (ctx) {
    shared++;
    const before = shared;
    const got = await kv.collection("c").get("k" + ctx.n);
    return { n: ctx.n, got, before };
  }`;
  const waiting: { n: number; release: () => void }[] = [];
  const host: HostCall = (_op, args) =>
    new Promise((r) => {
      const n = Number(String(args[1]).slice(1));
      waiting.push({ n, release: () => r(`v${n}`) });
    });
  const run = (appId: string, n: number, over: Partial<PoolRun> = {}): Promise<RunOutcome> =>
    pool.run({
      appId,
      key: `${appId}/waiting`,
      name: "main",
      source: WAITING,
      modules: new Map(),
      ctx: { n },
      limits: resolveLimits({}, 300),
      host,
      ...over,
    });

  beforeAll(async () => {
    pool = await createEnginePool({
      workers: 2,
      appConcurrency: 1,
      sdkCallsInFlight: 64,
      sdkCallsPerRun: 1000,
      clock: systemClock,
      logger: log.logger,
    });
    await pool.ready();
  });
  afterAll(async () => {
    await pool.close();
  });

  it("200 runs of one app wait on their SDK calls at once, each answered with its own value", async () => {
    const N = 200;
    const runs = Array.from({ length: N }, (_, n) => run("app-a", n, { waitMs: 60_000 }));
    // Every run reaches its SDK call before any is answered: with one run per worker at a time,
    // the second would never get there.
    await expect.poll(() => waiting.length, { timeout: 200_000, interval: 50 }).toBe(N);
    expect(pool.parked).toBe(N);
    // Runs of one app held one worker: the other stays free for other apps.
    const other = await run("app-b", 1000, {
      host: async () => "b",
    });
    expect(other.ok).toBe(true);
    for (const w of waiting.splice(0).reverse()) w.release();
    const outcomes = await Promise.all(runs);
    expect(outcomes.flatMap((o, n) => (o.ok ? [] : [`${n}:${o.kind}:${o.durationMs}`])).slice(0, 8)).toEqual(
      [],
    );
    outcomes.forEach((o, n) => {
      expect(o.ok).toBe(true);
      // Each run saw its own reply (its own capability), in a context of its own (module state).
      expect(o.ok && o.value).toEqual({ n, got: `v${n}`, before: 1 });
    });
    expect(pool.parked).toBe(0);
    expect(log.text()).not.toContain("sandbox worker");
  }, 300_000);
});
