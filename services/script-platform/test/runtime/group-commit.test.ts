import { systemClock } from "@app/kit/clock";
import { type Database, openDatabase } from "@app/kit/db";
import { createTestDatabase, createTestEnv, type TestEnv, testBackend } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import {
  createGroupCommit,
  type MergedWrite,
  type TransactionInfo,
} from "../../src/dispatch/group-commit.js";
import type { ExecutionRecord } from "../../src/dispatch/job.js";
import { type OutboxRow, outboxRepo } from "../../src/dispatch/outbox.js";
import { executionStatus, executionsRepo } from "../../src/execution/executions-repository.js";
import { until } from "./turns.js";

const T = "2026-11-24T08:00:00.000Z";

function row(i: number, extra: Partial<OutboxRow> = {}): OutboxRow {
  return {
    id: newId(),
    app_id: "app-1",
    source_kind: "http",
    trigger_id: i % 2 ? `trigger-${i}` : null,
    script_id: `script-${i}`,
    execution_id: newId(),
    payload: JSON.stringify({ request: { path: `/p/${i}` }, request_id: `r${i}` }),
    due_at: T,
    attempts: i % 3,
    depth: i % 4,
    principal: i % 2 ? null : JSON.stringify({ kind: "admin", id: `a${i}` }),
    reply_to: `instance-x/${i}`,
    claimed_by: "instance-x",
    lease_until: "2026-11-24T08:05:30.000Z",
    created_at: T,
    ...extra,
  };
}

function record(i: number): ExecutionRecord {
  return {
    id: newId(),
    app_id: "app-1",
    script_id: `script-${i}`,
    invocation_type: "http",
    status: i % 2 ? "failed" : "succeeded",
    duration_ms: i,
    logs: [{ level: "info", message: `line ${i}`, at: T }],
    error: i % 2 ? { code: "script_error", message: `boom ${i}`, stack: "at x", line: i, column: 2 } : null,
    instance_id: "instance-x",
    created_at: T,
    finished_at: T,
  };
}

/** Whether `p` has resolved, after one turn of the event loop. */
async function settledNow(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => {
    done = true;
  });
  await new Promise((r) => setImmediate(r));
  return done;
}

/** Counts calls of a merged write's apply (one per batch and kind) and the rows each got. */
function counted<T>(w: MergedWrite<T>, calls: number[]): MergedWrite<T> {
  return {
    ...w,
    apply: (trx, data) => {
      calls.push(data.length);
      return w.apply(trx, data);
    },
  };
}

describe("group commit of sync-path writes", () => {
  let database: Database<PlatformDB>;
  let cleanup: () => Promise<void>;
  let outbox: ReturnType<typeof outboxRepo>;
  let executions: ReturnType<typeof executionsRepo>;
  let txs: TransactionInfo[];

  beforeAll(async () => {
    ({ database, cleanup } = await createTestDatabase<PlatformDB>(migrations));
    outbox = outboxRepo(database, systemClock);
    executions = executionsRepo(database);
  });
  afterAll(async () => {
    await cleanup();
  });
  beforeEach(async () => {
    txs = [];
    await database.db.deleteFrom("outbox").execute();
    await database.db.deleteFrom("executions").execute();
  });

  const outboxRows = async () =>
    (await database.db.selectFrom("outbox").selectAll().orderBy("id").execute()).map((r) => ({
      ...r,
      attempts: Number(r.attempts),
      depth: Number(r.depth),
      due_at: database.dialect.fromTimestamp(r.due_at),
      created_at: database.dialect.fromTimestamp(r.created_at),
      lease_until: r.lease_until === null ? null : database.dialect.fromTimestamp(r.lease_until),
    }));

  it("writes concurrent inserts in one transaction, one statement per kind, every column exact", async () => {
    const commits = createGroupCommit({
      database,
      onTransaction: (t) => txs.push(t),
    });
    const rows = Array.from({ length: 20 }, (_, i) => row(i));
    const records = Array.from({ length: 20 }, (_, i) => record(i));
    const insertCalls: number[] = [];
    const recordCalls: number[] = [];
    await Promise.all([
      ...rows.map((r) => commits.write(counted(outbox.insertWrite(r), insertCalls))),
      ...records.map((e) => commits.write(counted(executions.insertWrite(e), recordCalls))),
    ]);
    expect(txs).toEqual([{ items: 40, ok: true, alone: false }]);
    expect(insertCalls).toEqual([20]);
    expect(recordCalls).toEqual([20]);
    expect(await outboxRows()).toEqual([...rows].sort((a, b) => (a.id < b.id ? -1 : 1)));
    const listed = await executions.list("app-1", { limit: 50 });
    expect(listed.items.map((e) => ({ ...e, duration_ms: Number(e.duration_ms) }))).toEqual(
      [...records].reverse().map((e) => ({ ...e, status: executionStatus(e.status, e.error?.code) })),
    );
  });

  it("settles many rows in one transaction: records in, outbox rows out", async () => {
    const rows = Array.from({ length: 12 }, (_, i) => row(i));
    await database.writeTx((trx) => outbox.insertMany(trx, rows));
    const commits = createGroupCommit({
      database,
      onTransaction: (t) => txs.push(t),
    });
    const deleteCalls: number[] = [];
    await Promise.all(
      rows
        .slice(0, 10)
        .map((r, i) =>
          commits.write(executions.insertWrite(record(i)), counted(outbox.deleteWrite(r.id), deleteCalls)),
        ),
    );
    expect(txs).toEqual([{ items: 10, ok: true, alone: false }]);
    expect(deleteCalls).toEqual([10]);
    expect((await outboxRows()).map((r) => r.id).sort()).toEqual(
      rows
        .slice(10)
        .map((r) => r.id)
        .sort(),
    );
    expect((await executions.list("app-1", { limit: 50 })).items).toHaveLength(10);
  });

  it("a failing write fails only its own caller: the batch is retried item by item", async () => {
    const existing = row(99);
    await database.writeTx((trx) => outbox.insert(trx, existing));
    const commits = createGroupCommit({
      database,
      onTransaction: (t) => txs.push(t),
    });
    const rows = Array.from({ length: 8 }, (_, i) => row(i));
    const bad = row(50, { id: existing.id }); // duplicate primary key
    const all = [...rows.slice(0, 4), bad, ...rows.slice(4)];
    const results = await Promise.allSettled(all.map((r) => commits.write(outbox.insertWrite(r))));
    expect(results.map((r) => r.status)).toEqual([
      "fulfilled",
      "fulfilled",
      "fulfilled",
      "fulfilled",
      "rejected",
      "fulfilled",
      "fulfilled",
      "fulfilled",
      "fulfilled",
    ]);
    expect(txs[0]).toEqual({ items: 9, ok: false, alone: false });
    expect(txs.slice(1)).toHaveLength(9);
    expect(txs.slice(1).filter((t) => !t.ok)).toEqual([{ items: 1, ok: false, alone: true }]);
    // Everyone else's row is there; the bad one did not overwrite the existing row.
    const stored = await outboxRows();
    expect(stored.map((r) => r.id).sort()).toEqual([existing.id, ...rows.map((r) => r.id)].sort());
    expect(stored.find((r) => r.id === existing.id)?.script_id).toBe("script-99");
  });

  it("hands each plain function its own result, in the same transaction as merged writes", async () => {
    const commits = createGroupCommit({
      database,
      onTransaction: (t) => txs.push(t),
    });
    const r = row(1);
    const [a, , b] = await Promise.all([
      commits.run(async (trx) => (await trx.selectFrom("outbox").select("id").execute()).length),
      commits.write(outbox.insertWrite(r)),
      commits.run(async () => "second"),
    ]);
    // Merged writes go first: the function sees the row inserted in the same batch.
    expect(a).toBe(1);
    expect(b).toBe("second");
    expect(txs).toHaveLength(1);
  });

  /** A group commit on a clock that moves `step.ms` per reading: each COMMIT appears to take that long. */
  const stepped = (step: { ms: number }, opts: { slowCommitMs?: number; maxBatch?: number } = {}) => {
    let now = 0;
    const sleeps: { ms: number; release: () => void }[] = [];
    const commits = createGroupCommit({
      database,
      ...opts,
      onTransaction: (t) => txs.push(t),
      now: () => (now += step.ms),
      sleep: (ms, wake) =>
        new Promise<void>((resolve) => {
          sleeps.push({ ms, release: resolve });
          void wake.then(resolve);
        }),
    });
    const pause = (ms: number) => {
      now += ms;
    };
    return { commits, sleeps, pause };
  };

  it("by default never waits on a timer, even for slow commits: writes arriving during a commit share the next one, back to back", async () => {
    // Frozen timers: a group commit that waited a timed window between batches would hang here.
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      // The defaults (no window on either backend: commits do not block the event loop). Each
      // COMMIT appears to take 8 ms: a slow disk's fsync.
      const { commits } = stepped({ ms: 8 });
      for (let round = 0; round < 3; round++) {
        let later: Promise<void>[] = [];
        // Three writes handed in while the first batch's transaction runs...
        await commits.run(async (trx) => {
          await outbox.insert(trx, row(10 * round));
          later = [1, 2, 3].map((i) => commits.write(outbox.insertWrite(row(10 * round + i))));
        });
        // ...commit together in the batch right after it, with no timer in between.
        await Promise.all(later);
      }
      expect(txs.map((t) => t.items)).toEqual([1, 3, 1, 3, 1, 3]);
      expect(commits.stats.windows).toBe(0);
      expect((await outboxRows()).length).toBe(12);
    } finally {
      vi.useRealTimers();
    }
  });

  it("with a slow COMMIT (fsync) under load waits a window for more writes, and commits early when the batch is full", async () => {
    const { commits, sleeps, pause } = stepped({ ms: 2 }, { slowCommitMs: 1, maxBatch: 4 });
    // Idle: the first write commits without a window.
    await commits.write(outbox.insertWrite(row(0)));
    expect(sleeps).toHaveLength(0);
    // Right after a commit whose COMMIT took 2 ms (load), the next batch waits 4x that...
    const first = commits.write(outbox.insertWrite(row(1)));
    await until(() => sleeps.length === 1);
    expect(sleeps[0]?.ms).toBe(8);
    // ...and writes arriving meanwhile join it.
    const second = commits.write(outbox.insertWrite(row(2)));
    sleeps[0]?.release();
    await Promise.all([first, second]);
    expect(txs.map((t) => t.items)).toEqual([1, 2]);
    // A batch that fills up during its window commits without waiting for the window's end.
    const third = commits.write(outbox.insertWrite(row(3)));
    await until(() => sleeps.length === 2);
    await Promise.all([third, ...[4, 5, 6].map((i) => commits.write(outbox.insertWrite(row(i))))]);
    expect(txs.map((t) => t.items)).toEqual([1, 2, 4]);
    // After a quiet spell the window is skipped again.
    pause(1000);
    await commits.write(outbox.insertWrite(row(7)));
    expect(sleeps).toHaveLength(2);
    expect(commits.stats.windows).toBe(2);
    expect((await outboxRows()).length).toBe(8);
  });
});

describe.skipIf(testBackend() !== "sqlite")(
  "group commit on SQLite, with the WAL sync held by the test",
  () => {
    let env: TestEnv;
    let database: Database<PlatformDB>;
    /** Syncs started and not completed; none is held until `held` is set. */
    const syncs: (() => void)[] = [];
    let held = false;
    const sync = () =>
      new Promise<void>((resolve) => {
        if (held) syncs.push(resolve);
        else resolve();
      });

    beforeAll(async () => {
      env = await createTestEnv("gc_sync");
      database = openDatabase<PlatformDB>({
        sqliteFile: env.sqliteFile,
        sqliteSync: sync,
        sqliteCheckpointAfter: false,
      });
      await database.migrate(migrations);
    });
    afterAll(async () => {
      held = false;
      for (const s of syncs.splice(0)) s();
      await database.close();
      await env.cleanup();
    });

    it("with two batches in flight, commits the next during the previous one's fsync and holds a third until the first is durable", async () => {
      const outbox = outboxRepo(database, systemClock);
      const txs: TransactionInfo[] = [];
      const commits = createGroupCommit({
        database,
        pipeline: 2,
        onTransaction: (t) => txs.push(t),
      });
      const stored = async () =>
        (await database.reader.selectFrom("outbox").select("id").execute()).map((r) => r.id).sort();
      held = true;
      const rows = Array.from({ length: 4 }, (_, i) => row(i));
      const first = commits.write(outbox.insertWrite(rows[0] as OutboxRow));
      await until(() => syncs.length === 1);
      // The first batch committed; its fsync runs. The next batch commits meanwhile...
      const second = Promise.all([1, 2].map((i) => commits.write(outbox.insertWrite(rows[i] as OutboxRow))));
      await expect.poll(stored).toEqual([rows[0], rows[1], rows[2]].map((r) => r?.id).sort());
      // ...and a third waits: two batches in flight at most.
      const third = commits.write(outbox.insertWrite(rows[3] as OutboxRow));
      expect(await settledNow(first)).toBe(false);
      expect((await stored()).length).toBe(3);
      expect(txs.map((t) => t.items)).toEqual([]);

      syncs.shift()?.(); // the first fsync completes: only the first batch is durable
      await first;
      expect(await settledNow(second)).toBe(false);
      await until(() => syncs.length === 1); // the second batch's fsync
      await expect.poll(stored).toHaveLength(4); // the third batch committed once a slot was free
      syncs.shift()?.();
      await second;
      await until(() => syncs.length === 1);
      syncs.shift()?.();
      await third;
      expect(txs.map((t) => t.items)).toEqual([1, 2, 1]);
    });

    it("writeCommitted resolves at its batch's COMMIT; a plain write of the same batch, and the next batch, wait for the fsync", async () => {
      const outbox = outboxRepo(database, systemClock);
      const txs: TransactionInfo[] = [];
      const commits = createGroupCommit({
        database,
        onTransaction: (t) => txs.push(t),
      });
      held = true;
      const rows = Array.from({ length: 3 }, (_, i) => row(i));
      const early = commits.writeCommitted(outbox.insertWrite(rows[0] as OutboxRow));
      const plain = commits.write(outbox.insertWrite(rows[1] as OutboxRow));
      await early; // with the batch's fsync still held
      expect(syncs).toHaveLength(1);
      const stored = (await database.reader.selectFrom("outbox").select("id").execute()).map((r) => r.id);
      expect(rows.map((r) => stored.includes(r.id))).toEqual([true, true, false]);
      expect(await settledNow(plain)).toBe(false);
      // One batch in flight until durable: the next waits for the fsync even when it is early.
      const next = commits.writeCommitted(outbox.insertWrite(rows[2] as OutboxRow));
      expect(await settledNow(next)).toBe(false);
      expect(txs).toEqual([]);
      syncs.shift()?.();
      await plain;
      await next; // committed; its own fsync is held now
      await until(() => syncs.length === 1);
      expect(txs.map((t) => [t.items, t.ok])).toEqual([[2, true]]);
      held = false;
      for (const s of syncs.splice(0)) s();
      await until(() => txs.length === 2);
      expect(txs[1]).toMatchObject({ items: 1, ok: true });
    });
  },
);
