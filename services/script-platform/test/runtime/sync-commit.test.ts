import { systemClock } from "@app/kit/clock";
import { type Database, openDatabase } from "@app/kit/db";
import { createTestEnv, type TestEnv } from "@app/kit/db/testing";
import { createLogger } from "@app/kit/logger";
import { afterEach, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import { createInbox } from "../../src/dispatch/inbox.js";
import type { Job } from "../../src/dispatch/job.js";
import { pubsubRow, succeeded, testDispatcher } from "../triggers/outbox-fixtures.js";

// A sync request's outbox row (reply_to: never retried) runs once its insert COMMITTED, before
// the commit's fsync; the settle after the run is acknowledged only once durable. On PostgreSQL
// a commit is durable, and the same test shows the row runs and settles.

let env: TestEnv | null = null;
let database: Database<PlatformDB> | null = null;
/** Syncs of the SQLite WAL started and not completed while `held`. */
const syncs: (() => void)[] = [];
let held = false;
afterEach(async () => {
  held = false;
  for (const s of syncs.splice(0)) s();
  await database?.close();
  await env?.cleanup();
  database = null;
  env = null;
});

it("runs a sync request's row once committed, before its fsync, and settles it durably", async () => {
  env = await createTestEnv("sync_commit");
  const db = openDatabase<PlatformDB>({
    url: env.databaseUrl,
    sqliteFile: env.sqliteFile,
    sqliteSync: () =>
      new Promise<void>((resolve) => {
        if (held) syncs.push(resolve);
        else resolve();
      }),
    sqliteCheckpointAfter: false,
  });
  database = db;
  await db.migrate(migrations);
  const clock = systemClock;
  const ran: Job[] = [];
  const inbox = createInbox({ instanceId: "A", capacity: 10 });
  const dispatcher = testDispatcher({
    database: db,
    clock,
    logger: createLogger({ name: "test", level: "silent" }),
    inbox,
    // No poll during the test: a claim in flight reserves the free slots.
    pollMs: 3_600_000,
    executor: {
      run: async (job) => {
        ran.push(job);
        return succeeded(job, clock);
      },
      scripts: async () => new Map(),
    },
  });
  await dispatcher.start();
  await dispatcher.idle(); // the start's claim found nothing
  const waiter = inbox.register();
  if (!waiter) throw new Error("no inbox slot");
  const row = pubsubRow(clock, "app-1", {
    source_kind: "http",
    payload: JSON.stringify({ request: { method: "GET", path: "/" }, request_id: "r1" }),
    execution_id: "exec-1",
    reply_to: waiter.replyTo,
  });
  const sqlite = db.backend === "sqlite";
  held = sqlite;
  await dispatcher.submitOwn(row);
  // The run started and answered with the row's own fsync still held.
  expect((await waiter.result)?.ok).toBe(true);
  expect(ran.map((j) => j.executionId)).toEqual(["exec-1"]);
  if (sqlite) expect(syncs).toHaveLength(1);
  // The settle (record in, row out) commits after that fsync, and waits for its own.
  held = false;
  for (const s of syncs.splice(0)) s();
  await dispatcher.idle();
  await dispatcher.stop();
  const left = await db.reader.selectFrom("outbox").select("id").where("id", "=", row.id).execute();
  const records = await db.reader
    .selectFrom("executions")
    .select("status")
    .where("app_id", "=", "app-1")
    .execute();
  expect([left.length, records.map((r) => r.status)]).toEqual([0, ["succeeded"]]);
});
