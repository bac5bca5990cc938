import { FakeClock, toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import { createGroupCommit } from "../../src/dispatch/group-commit.js";
import type { ExecutionRecord } from "../../src/dispatch/job.js";
import { type OutboxRow, outboxRepo } from "../../src/dispatch/outbox.js";
import { executionsRepo } from "../../src/execution/executions-repository.js";
import { pubsubRow } from "./outbox-fixtures.js";

const APP = newId();

/**
 * A settled run (record in, outbox row out) is one group-commit write: concurrent settles merge,
 * and on PostgreSQL a batch of only settles is one statement without BEGIN/COMMIT. Either both
 * writes of a settle happen or neither; a settle retried after an unclear failure still works.
 */
describe("settles: record in and outbox row out together", () => {
  let database: Database<PlatformDB>;
  let cleanup: () => Promise<void>;
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00.000Z"));
  let transactions = 0;
  /** The database as the group commit sees it, counting the transactions it opens. */
  let counted: Database<PlatformDB>;

  const row = (): OutboxRow =>
    pubsubRow(clock, APP, { payload: "{}", claimed_by: "A", lease_until: toIso(clock.now() + 60_000) });
  const record = (r: OutboxRow): ExecutionRecord => ({
    id: newId(),
    app_id: r.app_id,
    script_id: r.script_id,
    invocation_type: "pubsub",
    status: "succeeded",
    duration_ms: 1,
    logs: [{ level: "info", message: r.id, at: clock.iso() }],
    error: null,
    instance_id: "A",
    created_at: clock.iso(),
    finished_at: clock.iso(),
  });
  const outboxIds = async () =>
    (await database.db.selectFrom("outbox").select("id").execute()).map((r) => r.id);
  const recordIds = async () =>
    (await database.db.selectFrom("executions").select("id").where("app_id", "=", APP).execute()).map(
      (r) => r.id,
    );

  beforeAll(async () => {
    const t = await createTestDatabase<PlatformDB>(migrations);
    database = t.database;
    cleanup = t.cleanup;
    counted = Object.create(database, {
      // The group commit's transactions (it resolves writeCommitted items at COMMIT).
      writeTxCommitted: {
        value: (fn: Parameters<Database<PlatformDB>["writeTxCommitted"]>[0]) => {
          transactions++;
          return database.writeTxCommitted(fn);
        },
      },
    }) as Database<PlatformDB>;
  });
  afterAll(async () => cleanup());
  beforeEach(async () => {
    await database.db.deleteFrom("outbox").execute();
    await database.db.deleteFrom("executions").execute();
    transactions = 0;
  });

  it("concurrent settles merge; on PostgreSQL without a transaction of their own", async () => {
    const rows = Array.from({ length: 12 }, row);
    const kept = row();
    await outboxRepo(database, clock).insertMany(database.db, [...rows, kept]);
    const executions = executionsRepo(database);
    const commits = createGroupCommit({ database: counted });
    const records = rows.map(record);
    await Promise.all(
      rows.map((r, i) => commits.write(executions.settleWrite(records[i] as ExecutionRecord, r.id))),
    );
    expect(await outboxIds()).toEqual([kept.id]);
    expect((await recordIds()).sort()).toEqual(records.map((r) => r.id).sort());
    expect(commits.stats.items).toBe(12);
    expect(commits.stats.transactions).toBeLessThan(12);
    expect(transactions).toBe(database.backend === "postgres" ? 0 : commits.stats.transactions);
  });

  it("a settle batched with another kind of write runs in a transaction (all or none)", async () => {
    const [a, b] = [row(), row()];
    const repo = outboxRepo(database, clock);
    await repo.insertMany(database.db, [a]);
    const commits = createGroupCommit({ database: counted });
    const executions = executionsRepo(database);
    await Promise.all([
      commits.write(executions.settleWrite(record(a), a.id)),
      commits.write(repo.insertWrite(b)),
    ]);
    expect(await outboxIds()).toEqual([b.id]);
    expect(await recordIds()).toHaveLength(1);
    expect(transactions).toBe(commits.stats.transactions);
    expect(transactions).toBeGreaterThan(0);
  });

  it("a settle written twice (retried after an unclear failure) keeps one record, the row gone", async () => {
    const r = row();
    await outboxRepo(database, clock).insertMany(database.db, [r]);
    const executions = executionsRepo(database);
    const commits = createGroupCommit({ database: counted });
    const rec = record(r);
    await commits.write(executions.settleWrite(rec, r.id));
    await commits.write(executions.settleWrite(rec, r.id));
    expect(await outboxIds()).toEqual([]);
    expect(await recordIds()).toEqual([rec.id]);
  });
});
