import { FakeClock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { captureLogger } from "@app/kit/logger";
import type { CompiledQuery, Kysely } from "kysely";
import { afterAll, beforeAll, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import { Inbox } from "../../src/dispatch/inbox.js";
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
  const inbox = new Inbox("A", 10);
  const dispatcher = testDispatcher({
    database: claims.database,
    clock,
    logger: cap.logger,
    executor,
    inbox,
    maxConcurrency: 4,
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
