import { FakeClock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { captureLogger } from "@app/kit/logger";
import type { CompiledQuery, Kysely } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import type { DispatcherDeps } from "../../src/dispatch/dispatcher.js";
import { createInbox, type Inbox } from "../../src/dispatch/inbox.js";
import type { Finished, Job, JobRunner } from "../../src/dispatch/job.js";
import { outboxRepo } from "../../src/dispatch/outbox.js";
import { until } from "../runtime/turns.js";
import { backlogRow, pubsubRow, succeeded, testDispatcher } from "./outbox-fixtures.js";

// A claim in flight holds the free slots it may fill. A sync request arriving meanwhile used to
// find none and take the slow path (a durable unclaimed insert, then wait for the claim after
// this one); now it takes one of those slots and runs at once, and the claim gives back the rows
// it got beyond the slots it still had. The slot cap holds throughout.

const APP = newId();
let database: Database<PlatformDB>;
let cleanup: () => Promise<void>;
beforeAll(async () => {
  const t = await createTestDatabase<PlatformDB>(migrations);
  database = t.database;
  cleanup = t.cleanup;
});
afterAll(async () => cleanup());

/**
 * `database` whose claim statement has run (the rows are claimed in the database) but whose
 * answer reaches the dispatcher only once `release()` is called: a claim in flight, held.
 */
function heldClaims(db: Database<PlatformDB>) {
  let open: (() => void) | null = null;
  let gate: Promise<void> | null = new Promise((r) => {
    open = r;
  });
  let held = 0;
  const inner = db.db;
  const proxied = new Proxy(inner, {
    get(target, key) {
      if (key === "executeQuery")
        return async (q: CompiledQuery, ...rest: unknown[]) => {
          const result = await (target.executeQuery as (...a: unknown[]) => Promise<unknown>)(q, ...rest);
          if (gate && /update "outbox" set "claimed_by"/.test(q.sql)) {
            held++;
            await gate;
          }
          return result;
        };
      const v = Reflect.get(target, key, target) as unknown;
      return typeof v === "function" ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  }) as Kysely<PlatformDB>;
  return {
    database: { ...db, db: proxied } as Database<PlatformDB>,
    get held() {
      return held;
    },
    release() {
      gate = null;
      open?.();
    },
  };
}

it("a sync request runs in a slot a claim in flight has not filled; the claim gives back the rest", async () => {
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00.000Z"));
  const cap = captureLogger();
  const rows = Array.from({ length: 4 }, (_, i) => backlogRow(clock, APP, i));
  await outboxRepo(database, clock).insertMany(database.db, rows);

  const jobs: Job[] = [];
  const waiting: (() => void)[] = [];
  let now = 0;
  let most = 0;
  const executor: JobRunner = {
    scripts: async () => new Map(),
    run(job) {
      jobs.push(job);
      most = Math.max(most, ++now);
      // Every run waits to be finished by the test (oldest first).
      return new Promise<Finished>((resolve) => {
        waiting.push(() => {
          now--;
          resolve(succeeded(job, clock));
        });
      });
    },
  };
  const claims = heldClaims(database);
  const inbox = createInbox({ instanceId: "A", capacity: 10 });
  const dispatcher = testDispatcher({
    database: claims.database,
    clock,
    logger: cap.logger,
    executor,
    inbox,
    maxConcurrency: 4,
    syncSlots: 0,
  });
  await dispatcher.start();
  // The start's claim took all four rows in the database; its answer is held.
  await until(() => claims.held === 1);

  const waiter = inbox.register();
  if (!waiter) throw new Error("no inbox slot");
  const sync = pubsubRow(clock, APP, {
    source_kind: "http",
    payload: JSON.stringify({ request: { method: "GET", path: "/" }, request_id: "r1" }),
    execution_id: "exec-sync",
    reply_to: waiter.replyTo,
  });
  await dispatcher.submitOwn(sync);
  await until(() => jobs.length === 1);
  expect(jobs.map((j) => j.executionId)).toEqual(["exec-sync"]);
  expect(claims.held).toBe(1);

  // The claim returns four rows with three slots left: three run, one is given back, and it
  // runs once a slot is free. Never more than four at once.
  claims.release();
  await until(() => jobs.length === 4);
  expect(dispatcher.running).toBe(4);
  const unclaimed = () =>
    database.reader
      .selectFrom("outbox")
      .select("id")
      .where("app_id", "=", APP)
      .where("claimed_by", "is", null)
      .execute();
  await until(async () => (await unclaimed()).length === 1);
  waiting.shift()?.(); // the sync run ends: its answer, and a slot for the row given back
  expect((await waiter.result)?.ok).toBe(true);
  await until(() => jobs.length === 5);
  for (const finish of waiting.splice(0)) finish();
  await dispatcher.idle();
  await dispatcher.stop();
  expect(most).toBeLessThanOrEqual(4);
  const ran = jobs.filter((j) => j.invocationType !== "http").map((j) => j.event);
  expect(new Set(ran.map((e) => JSON.stringify(e))).size).toBe(4);
  const left = await database.reader.selectFrom("outbox").select("id").where("app_id", "=", APP).execute();
  expect(left).toHaveLength(0);
});

/** An executor whose runs all wait to be finished by the test (oldest first), and what ran. */
function heldRuns(clock: FakeClock) {
  const jobs: Job[] = [];
  const waiting: (() => void)[] = [];
  const executor: JobRunner = {
    scripts: async () => new Map(),
    run(job) {
      jobs.push(job);
      return new Promise<Finished>((resolve) => {
        waiting.push(() => resolve(succeeded(job, clock)));
      });
    },
  };
  return { jobs, waiting, executor, finishOne: () => waiting.shift()?.() };
}

/** A sync request's row for `inbox`, of `app`. */
function syncRow(clock: FakeClock, app: string, inbox: Inbox, executionId: string) {
  const waiter = inbox.register();
  if (!waiter) throw new Error("no inbox slot");
  const row = pubsubRow(clock, app, {
    source_kind: "http",
    payload: JSON.stringify({ request: { method: "GET", path: "/" }, request_id: executionId }),
    execution_id: executionId,
    reply_to: waiter.replyTo,
  });
  return { row, waiter };
}

/** `backlog` due rows of a fresh app, and a started dispatcher over them whose runs the test finishes. */
async function backlogged(backlog: number, deps: Partial<DispatcherDeps>) {
  const app = newId();
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00.000Z"));
  await outboxRepo(database, clock).insertMany(
    database.db,
    Array.from({ length: backlog }, (_, i) => backlogRow(clock, app, i)),
  );
  const runs = heldRuns(clock);
  const inbox = createInbox({ instanceId: "A", capacity: 10 });
  const dispatcher = testDispatcher({
    database,
    clock,
    logger: captureLogger().logger,
    executor: runs.executor,
    inbox,
    ...deps,
  });
  await dispatcher.start();
  return { app, clock, runs, inbox, dispatcher };
}

it("background runs leave the sync requests' share of the slots free, however long the backlog", async () => {
  // 8 slots, a quarter of them kept for sync requests.
  const { app, clock, runs, inbox, dispatcher } = await backlogged(10, { maxConcurrency: 8 });
  await until(() => runs.jobs.length === 6);
  for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r)); // nothing more is claimed
  expect([runs.jobs.length, dispatcher.running]).toEqual([6, 6]);

  const a = syncRow(clock, app, inbox, "exec-a");
  const b = syncRow(clock, app, inbox, "exec-b");
  await dispatcher.submitOwn(a.row);
  await dispatcher.submitOwn(b.row);
  await until(() => runs.jobs.length === 8);
  expect(runs.jobs.slice(6).map((j) => j.executionId)).toEqual(["exec-a", "exec-b"]);

  // Everything still runs, exactly once.
  while (runs.jobs.length < 12 || runs.waiting.length > 0) {
    runs.finishOne();
    await new Promise((r) => setImmediate(r));
  }
  await dispatcher.idle();
  await dispatcher.stop();
  expect((await a.waiter.result)?.ok).toBe(true);
  expect(new Set(runs.jobs.map((j) => j.executionId)).size).toBe(12);
  const left = await database.reader.selectFrom("outbox").select("id").where("app_id", "=", app).execute();
  expect(left).toHaveLength(0);
});

it("a sync request finding every slot taken gets the next free one before any claim, or after its wait goes in unclaimed", async () => {
  const { app, clock, runs, inbox, dispatcher } = await backlogged(6, {
    maxConcurrency: 2,
    syncSlots: 0,
    syncWaitMs: 700,
  });
  await until(() => runs.jobs.length === 2);

  // Both slots are taken: the request waits in this process, its row not written yet.
  const a = syncRow(clock, app, inbox, "exec-a");
  const submitted = dispatcher.submitOwn(a.row);
  const rowOf = (id: string) =>
    database.reader.selectFrom("outbox").select("claimed_by").where("id", "=", id).executeTakeFirst();
  await until(() => clock.nextDelay() === 700);
  expect(await rowOf(a.row.id)).toBeUndefined();

  // A run ends: its slot goes to the waiting request (written claimed), not to the four backlog rows.
  runs.finishOne();
  await submitted;
  await until(() => runs.jobs.length === 3);
  expect(runs.jobs[2]?.executionId).toBe("exec-a");
  expect(await rowOf(a.row.id)).toEqual({ claimed_by: "A" });

  // Nothing ends within its wait: the next request's row goes in unclaimed, behind the backlog.
  const b = syncRow(clock, app, inbox, "exec-b");
  const late = dispatcher.submitOwn(b.row);
  await until(() => clock.nextDelay() === 700);
  await clock.advance(700);
  await late;
  expect(await rowOf(b.row.id)).toEqual({ claimed_by: null });

  while (runs.jobs.length < 8 || runs.waiting.length > 0) {
    runs.finishOne();
    await new Promise((r) => setImmediate(r));
  }
  await dispatcher.idle();
  await dispatcher.stop();
  expect((await a.waiter.result)?.ok).toBe(true);
  expect((await b.waiter.result)?.ok).toBe(true);
  expect(new Set(runs.jobs.map((j) => j.executionId)).size).toBe(8);
});

it("a claim that returns while more sync requests wait than slots are free gives back all its rows", async () => {
  const app = newId();
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00.000Z"));
  await outboxRepo(database, clock).insertMany(
    database.db,
    Array.from({ length: 4 }, (_, i) => backlogRow(clock, app, i)),
  );
  const runs = heldRuns(clock);
  let now = 0;
  let most = 0;
  const counted: JobRunner = {
    scripts: runs.executor.scripts,
    run: (job) => {
      most = Math.max(most, ++now);
      return runs.executor.run(job).finally(() => now--);
    },
  };
  const claims = heldClaims(database);
  const inbox = createInbox({ instanceId: "A", capacity: 10 });
  const dispatcher = testDispatcher({
    database: claims.database,
    clock,
    logger: captureLogger().logger,
    executor: counted,
    inbox,
    maxConcurrency: 2,
    syncSlots: 0,
    syncWaitMs: 700,
  });
  await dispatcher.start();
  await until(() => claims.held === 1); // the start's claim of 2 rows, held
  // Two requests take the claim's two slots; a third waits.
  const reqs = ["exec-a", "exec-b", "exec-c"].map((id) => syncRow(clock, app, inbox, id));
  await dispatcher.submitOwn(reqs[0]!.row);
  await dispatcher.submitOwn(reqs[1]!.row);
  const third = dispatcher.submitOwn(reqs[2]!.row);
  await until(() => runs.jobs.length === 2 && clock.nextDelay() === 700);

  // The claim returns 2 rows with no slot free and one request waiting: both rows go back.
  claims.release();
  const unclaimed = () =>
    database.reader
      .selectFrom("outbox")
      .select("id")
      .where("app_id", "=", app)
      .where("claimed_by", "is", null)
      .execute();
  await until(async () => (await unclaimed()).length === 4);
  expect(runs.jobs).toHaveLength(2);

  // The first run to end hands its slot to the waiting request, not to a backlog row.
  runs.finishOne();
  await third;
  await until(() => runs.jobs.length === 3);
  expect(runs.jobs.map((j) => j.executionId)).toEqual(["exec-a", "exec-b", "exec-c"]);

  while (runs.jobs.length < 7 || runs.waiting.length > 0) {
    runs.finishOne();
    await new Promise((r) => setImmediate(r));
  }
  await dispatcher.idle();
  await dispatcher.stop();
  expect(most).toBeLessThanOrEqual(2);
  for (const r of reqs) expect((await r.waiter.result)?.ok).toBe(true);
  expect(await unclaimed()).toHaveLength(0);
});
