import { systemClock } from "@app/kit/clock";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RunOutcome } from "../../src/sandbox/engine.js";
import { resolveLimits } from "../../src/sandbox/limits.js";
import {
  createEnginePool,
  type EnginePool,
  PIPELINE_DEPTH,
  type PoolRun,
  SCRIPTS_PER_WORKER,
} from "../../src/sandbox/pool.js";

/**
 * A worker keeps the scripts its runs brought (by run key, an LRU the pool mirrors): a run of a
 * script the worker holds carries only its ctx. The pool and the database play no part here, so
 * the figures are the same on both backends.
 */
describe("worker pool: scripts travel to a worker once per key, runs of one turn in one message", () => {
  let pool: EnginePool;
  const log = captureLogger();
  const source = (tag: string) =>
    `export default function (ctx) { let n = 0; for (let i = 0; i < ctx.loops; i++) n++; return ["${tag}", ctx.n, n]; }`;
  const run = (tag: string, n: number, over: Partial<PoolRun> = {}): Promise<RunOutcome> =>
    pool.run({
      appId: "app-a",
      key: `app-a:${tag}:v1`,
      name: tag,
      source: source(tag),
      modules: new Map(),
      ctx: { n, loops: 10 },
      limits: resolveLimits({}, 10),
      host: async () => null,
      ...over,
    });
  const value = (o: RunOutcome) => (o.ok ? o.value : o.kind);

  beforeAll(async () => {
    // One worker: every run goes to it, so what it holds is known exactly.
    pool = await createEnginePool({
      workers: 1,
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

  it("sends a script with its first run only; every run still answers with its own ctx", async () => {
    const sent = pool.stats.scriptsSent;
    const outcomes = await Promise.all(Array.from({ length: 20 }, (_, n) => run("one", n)));
    expect(outcomes.map(value)).toEqual(Array.from({ length: 20 }, (_, n) => ["one", n, 10]));
    expect(pool.stats.scriptsSent - sent).toBe(1);
  });

  it("sends it again when its limits change under the same key, and the new limits apply", async () => {
    await run("limits", 0);
    const sent = pool.stats.scriptsSent;
    const tight = resolveLimits({ max_operations: 10_000 }, 10);
    const o = await run("limits", 1, { limits: tight, ctx: { n: 1, loops: 1e7 } });
    expect(value(o)).toBe("operation_limit");
    expect(pool.stats.scriptsSent - sent).toBe(1);
    // Back to the first limits: sent once more, then held again.
    expect(value(await run("limits", 2))).toEqual(["limits", 2, 10]);
    expect(value(await run("limits", 3))).toEqual(["limits", 3, 10]);
    expect(pool.stats.scriptsSent - sent).toBe(2);
  });

  it("always sends a run without a key (drafts)", async () => {
    const sent = pool.stats.scriptsSent;
    for (let n = 0; n < 3; n++) expect(value(await run("draft", n, { key: null }))).toEqual(["draft", n, 10]);
    expect(pool.stats.scriptsSent - sent).toBe(3);
  });

  it("hands the runs released in one turn to a worker as one message; each answers alone", async () => {
    await run("turn", 0);
    const messages = pool.stats.messagesSent;
    // The first run is assigned, the rest handed on behind it (within PIPELINE_DEPTH).
    const n = PIPELINE_DEPTH;
    const outcomes = await Promise.all(Array.from({ length: n }, (_, i) => run("turn", i)));
    expect(outcomes.map(value)).toEqual(Array.from({ length: n }, (_, i) => ["turn", i, 10]));
    expect(pool.stats.messagesSent - messages).toBe(1);
  });

  it("sends the results of the runs one turn finished back as one message", async () => {
    // Two runs first: the worker then knows this script executes briefly (worker.ts Outbox).
    await run("back", 0);
    await run("back", 1);
    const received = pool.stats.messagesReceived;
    const n = PIPELINE_DEPTH;
    const outcomes = await Promise.all(Array.from({ length: n }, (_, i) => run("back", i)));
    expect(outcomes.map(value)).toEqual(Array.from({ length: n }, (_, i) => ["back", i, 10]));
    expect(pool.stats.messagesReceived - received).toBeLessThan(n);
  });

  it("does not hold a finished run's result behind a run handed on after it that hogs", async () => {
    await run("hog", 0);
    await run("hog", 1);
    // Same turn: the quick run is assigned, the hog handed on behind it, both in one message.
    const at = (p: Promise<RunOutcome>) => p.then((o) => ({ o, t: performance.now() }));
    const quick = at(run("hog", 2));
    const hog = at(run("hog", 3, { ctx: { n: 3, loops: 1e12 } }));
    const [q, h] = await Promise.all([quick, hog]);
    expect(value(q.o)).toEqual(["hog", 2, 10]);
    expect(value(h.o)).toBe("operation_limit");
    // The quick result went out while the hog still executed, not with the hog's own.
    expect(h.t - q.t).toBeGreaterThan(h.o.durationMs / 2);
  });

  it("fails only the run whose ctx cannot be cloned when it shares a message", async () => {
    const outcomes = await Promise.all([
      run("clone", 0),
      run("clone", 1, { ctx: { n: 1, loops: 10, bad: () => 1 } }),
      run("clone", 2),
    ]);
    expect(outcomes.map(value)).toEqual([["clone", 0, 10], "internal_error", ["clone", 2, 10]]);
    expect(log.text()).toContain("could not hand a run to a sandbox worker");
    // The pool forgot what the worker holds after the failed post: the next run carries its script.
    const sent = pool.stats.scriptsSent;
    expect(value(await run("clone", 3))).toEqual(["clone", 3, 10]);
    expect(pool.stats.scriptsSent - sent).toBe(1);
    expect(pool.stats.replaced).toBe(0);
  });

  it("past the table's size the oldest script is sent again, and the tables stay in step", async () => {
    const keys = Array.from({ length: SCRIPTS_PER_WORKER + 5 }, (_, i) => `many${i}`);
    const sent = pool.stats.scriptsSent;
    for (const [i, k] of keys.entries()) expect(value(await run(k, i))).toEqual([k, i, 10]);
    expect(pool.stats.scriptsSent - sent).toBe(keys.length);
    // The last SCRIPTS_PER_WORKER keys are held: no send, right script.
    const last = keys[keys.length - 1] as string;
    expect(value(await run(last, 1))).toEqual([last, 1, 10]);
    expect(pool.stats.scriptsSent - sent).toBe(keys.length);
    // The first ones fell out on both sides: sent again, and answered by the right script.
    expect(value(await run("many0", 2))).toEqual(["many0", 2, 10]);
    expect(pool.stats.scriptsSent - sent).toBe(keys.length + 1);
    expect(pool.stats.replaced).toBe(0);
  });
});
