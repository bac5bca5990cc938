import { FakeClock, toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import type { DispatcherDeps } from "../../src/dispatch/dispatcher.js";
import type { Finished, Job, JobRunner } from "../../src/dispatch/job.js";
import { type OutboxRow, outboxRepo } from "../../src/dispatch/outbox.js";
import { until } from "../runtime/turns.js";
import { backlogRow, pubsubRow, succeeded, testDispatcher } from "./outbox-fixtures.js";

const APP = newId();

/**
 * Under a backlog the dispatcher claims in batches: while 8 or more runs are in flight, a freed
 * slot waits for seven more (or at most 10 ms) instead of claiming its one replacement alone.
 */
describe("dispatcher: fewer, larger claims under a backlog", () => {
  let database: Database<PlatformDB>;
  let cleanup: () => Promise<void>;
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00.000Z"));
  const cap = captureLogger();

  beforeAll(async () => {
    const t = await createTestDatabase<PlatformDB>(migrations);
    database = t.database;
    cleanup = t.cleanup;
  });
  afterAll(async () => cleanup());

  /**
   * A dispatcher of instance "A" on this database, with 4 slots unless `extra` says otherwise,
   * all of them open to background runs (the slots kept for sync requests: claim-slots.test.ts).
   */
  const dispatcherWith = (executor: JobRunner, extra: Partial<DispatcherDeps> = {}) =>
    testDispatcher({
      database,
      clock,
      logger: cap.logger,
      executor,
      maxConcurrency: 4,
      syncSlots: 0,
      ...extra,
    });

  it("a freed slot waits for eight, or for the deferral timer; every row still runs once", async () => {
    /** Script ids of each claim (the executor reads a claim's scripts once). */
    const claims: string[][] = [];
    const jobs: Job[] = [];
    const waiting: (() => void)[] = [];
    const executor: JobRunner = {
      async scripts(ids) {
        claims.push([...ids]);
        return new Map();
      },
      run(job) {
        jobs.push(job);
        return new Promise<Finished>((resolve) => {
          waiting.push(() => resolve(succeeded(job, clock)));
        });
      },
    };
    const finish = (n: number) => {
      for (let i = 0; i < n; i++) waiting.shift()?.();
    };
    const rows = Array.from({ length: 48 }, (_, i) => backlogRow(clock, APP, i));
    await outboxRepo(database, clock).insertMany(database.db, rows);
    const dispatcher = dispatcherWith(executor, { maxConcurrency: 32 });
    await dispatcher.start();
    await until(() => jobs.length === 32);
    expect(claims.map((c) => c.length)).toEqual([32]);

    // Seven runs end: 25 still in flight, so nothing is claimed yet; a deferred claim is timed.
    finish(7);
    await until(() => dispatcher.running === 25 && clock.nextDelay() === 10);
    expect(jobs).toHaveLength(32);
    expect(claims).toHaveLength(1);

    // The eighth frees enough slots: one claim of eight.
    finish(1);
    await until(() => jobs.length === 40);
    expect(claims.map((c) => c.length)).toEqual([32, 8]);

    // One more ends; nothing else does: the deferral timer claims for the single free slot.
    finish(1);
    await until(() => dispatcher.running === 31 && clock.nextDelay() === 10);
    expect(jobs).toHaveLength(40);
    await clock.advance(10);
    await until(() => jobs.length === 41);
    expect(claims.map((c) => c.length)).toEqual([32, 8, 1]);

    // The rest: when fewer than eight runs are in flight, every freed slot claims at once.
    while (jobs.length < 48 || waiting.length > 0) {
      finish(waiting.length);
      await new Promise((r) => setImmediate(r));
    }
    await until(async () => (await database.db.selectFrom("outbox").select("id").execute()).length === 0);
    await dispatcher.stop();
    const ran = jobs.map((j) => j.scriptId).sort();
    expect(ran).toEqual(rows.map((r) => r.script_id).sort());
    const recorded = await database.db.selectFrom("executions").select("id").execute();
    expect(recorded).toHaveLength(48);
  });

  it("runs handed over by the outbox writer take free slots only, counted with the claimed ones", async () => {
    const dispatcher = dispatcherWith({
      scripts: async () => new Map(),
      run: () => new Promise<Finished>(() => {}),
    });
    // Not started: no slot to give.
    expect(dispatcher.local.reserve(1)).toBe(0);
    await dispatcher.start();
    await dispatcher.idle(); // its first claim (of nothing) holds the free slots while it runs
    expect(dispatcher.local.instanceId).toBe("A");
    expect(dispatcher.local.reserve(10)).toBe(4);
    expect(dispatcher.running).toBe(4);
    expect(dispatcher.local.reserve(1)).toBe(0);
    dispatcher.local.unreserve(3);
    expect(dispatcher.running).toBe(1);
    expect(dispatcher.local.reserve(2)).toBe(2);
    dispatcher.local.unreserve(3);
    await dispatcher.stop();
    expect(dispatcher.local.reserve(1)).toBe(0);
  });

  /** A row as a publish of this process writes it when it has a slot for it: claimed by "A". */
  const ownRow = (): OutboxRow =>
    pubsubRow(clock, APP, { claimed_by: "A", lease_until: toIso(clock.now() + 330_000) });
  const holders = async (ids: string[]) =>
    (
      await database.db
        .selectFrom("outbox")
        .select(["claimed_by", "lease_until"])
        .where("id", "in", ids)
        .execute()
    ).map((r) => [r.claimed_by, r.lease_until]);

  it("rows written claimed while the dispatcher stops are given back at once; stop waits for their write", async () => {
    const ran: Job[] = [];
    const dispatcher = dispatcherWith({
      scripts: async () => new Map(),
      run: async (job) => {
        ran.push(job);
        throw new Error("must not run");
      },
    });
    await dispatcher.start();
    await dispatcher.idle();
    // A publish reserved two slots and is writing its rows when the process begins to stop.
    expect(dispatcher.local.reserve(2)).toBe(2);
    const rows = [ownRow(), ownRow()];
    const repo = outboxRepo(database, clock);
    for (const r of rows) await repo.insert(database.db, r);
    let stopped = false;
    const stopping = dispatcher.stop().then(() => {
      stopped = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(stopped).toBe(false); // the reserved slots' rows are not settled yet
    dispatcher.local.start(rows, new Map());
    await stopping;
    expect(ran).toEqual([]);
    // Anyone's again now (another instance claims them at once), not after a 330 s lease.
    expect(await holders(rows.map((r) => r.id))).toEqual([
      [null, null],
      [null, null],
    ]);
    expect(dispatcher.running).toBe(0);
    await database.db.deleteFrom("outbox").execute();
  });

  it("rows claimed just as the dispatcher stops are given back, not failed as shutdown runs", async () => {
    const ran: Job[] = [];
    let stopping: Promise<void> | null = null;
    const dispatcher = dispatcherWith(
      {
        // The stop arrives between the claim and the runs' start.
        scripts: async () => {
          stopping = dispatcher.stop();
          return new Map();
        },
        run: async (job) => {
          ran.push(job);
          throw new Error("must not run");
        },
      },
      { failures: { onRunFailed: async () => "retry" } },
    );
    const rows = [ownRow(), ownRow(), ownRow()].map((r) => ({ ...r, claimed_by: null, lease_until: null }));
    const repo = outboxRepo(database, clock);
    for (const r of rows) await repo.insert(database.db, r);
    await dispatcher.start();
    await until(() => stopping !== null);
    await stopping;
    expect(ran).toEqual([]);
    expect(await holders(rows.map((r) => r.id))).toEqual(rows.map(() => [null, null]));
    const attempts = await database.db.selectFrom("outbox").select("attempts").execute();
    expect(attempts.map((a) => Number(a.attempts))).toEqual([0, 0, 0]);
    await database.db.deleteFrom("outbox").execute();
  });
});
