import { existsSync, statSync } from "node:fs";
import SQLite from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { type Database, DurabilityError, openDatabase } from "../src/db/database.js";
import { createTestEnv, type TestEnv, testBackend } from "../src/db/testing.js";

interface DB {
  notes: { id: number; body: string };
}
const migrations = [
  { version: 1, name: "notes", sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);" },
];

/**
 * A WAL sync the test completes by hand: each call is recorded and waits until the test resolves
 * or rejects it. Until `hold()`, calls complete at once (the migration's own sync).
 */
class SyncControl {
  readonly calls: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  private held = false;
  private waiters: { n: number; resolve: () => void }[] = [];

  readonly sync = (): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      if (!this.held) return resolve();
      this.calls.push({ resolve, reject });
      for (const w of this.waiters.filter((w) => this.calls.length >= w.n)) w.resolve();
      this.waiters = this.waiters.filter((w) => this.calls.length < w.n);
    });

  hold(): void {
    this.held = true;
  }

  /** Completes every held sync and the later ones (a test that failed must still close). */
  release(): void {
    this.held = false;
    for (const c of this.calls) c.resolve();
  }

  /** Resolves once the n-th held sync has started. */
  started(n: number): Promise<void> {
    if (this.calls.length >= n) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ n, resolve }));
  }
}

/** Whether `p` has settled, after letting every queued callback run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

const onSqlite = testBackend() === "sqlite";

describe("SQLite durability: writes are acknowledged once the WAL is synced", () => {
  let env: TestEnv | null = null;
  let database: Database<DB> | null = null;
  let control: SyncControl | null = null;
  afterEach(async () => {
    control?.release();
    control = null;
    await database?.close().catch(() => {});
    await env?.cleanup();
    database = null;
    env = null;
  });

  const open = async (
    extra: Partial<Parameters<typeof openDatabase>[0]> = {},
  ): Promise<{ database: Database<DB>; control: SyncControl; errors: { obj: object; msg: string }[] }> => {
    env = await createTestEnv("kdur");
    const c = new SyncControl();
    control = c;
    const errors: { obj: object; msg: string }[] = [];
    database = openDatabase<DB>({
      sqliteFile: env.sqliteFile,
      sqliteSync: c.sync,
      sqliteCheckpointAfter: false,
      logger: { error: (obj, msg) => errors.push({ obj, msg }) },
      ...extra,
    });
    await database.migrate(migrations);
    return { database, control: c, errors };
  };
  const ids = async (d: Database<DB>) =>
    (await d.reader.selectFrom("notes").select("id").orderBy("id").execute()).map((r) => r.id);

  it.skipIf(!onSqlite)(
    "a commit resolves only after its sync; commits during that sync share exactly one more, autocommit writes too",
    async () => {
      const { database, control } = await open();
      control.hold();
      const first = database.writeTx((trx) => trx.insertInto("notes").values({ id: 1, body: "a" }).execute());
      await control.started(1);
      // Committed and visible to readers, not yet acknowledged.
      expect(await ids(database)).toEqual([1]);
      expect(await settled(first)).toBe(false);

      // The write connection is free while the sync runs: a transaction and an autocommit write
      // commit meanwhile, and wait for the sync after the one in flight.
      const second = database.writeTx((trx) =>
        trx.insertInto("notes").values({ id: 2, body: "b" }).execute(),
      );
      const third = database.db.insertInto("notes").values({ id: 3, body: "c" }).execute();
      await expect.poll(() => ids(database)).toEqual([1, 2, 3]);
      expect(control.calls).toHaveLength(1);

      control.calls[0]?.resolve();
      await first;
      await control.started(2);
      expect(await settled(second)).toBe(false);
      expect(await settled(third)).toBe(false);
      control.calls[1]?.resolve();
      await Promise.all([second, third]);
      expect(control.calls).toHaveLength(2);
      expect(database.durability?.sync).toMatchObject({ syncs: 3, waits: 4 }); // migration + 3 writes
    },
  );

  it.skipIf(!onSqlite)(
    "writeTxCommitted resolves at COMMIT and hands the sync over as `durable`; a failed sync rejects it",
    async () => {
      const { database, control } = await open();
      control.hold();
      const { value, durable } = await database.writeTxCommitted(async (trx) => {
        await trx.insertInto("notes").values({ id: 1, body: "a" }).execute();
        return "done";
      });
      // Resolved with the sync still held: committed and visible, not yet durable.
      expect(value).toBe("done");
      await control.started(1);
      expect(await ids(database)).toEqual([1]);
      expect(await settled(durable)).toBe(false);
      // The connection was handed on: a plain writeTx commits meanwhile and waits for the next sync.
      const later = database.writeTx((trx) => trx.insertInto("notes").values({ id: 2, body: "b" }).execute());
      await expect.poll(() => ids(database)).toEqual([1, 2]);
      control.calls[0]?.resolve();
      await durable;
      await control.started(2);
      expect(await settled(later)).toBe(false);
      control.calls[1]?.resolve();
      await later;

      // A transaction that wrote nothing has nothing to sync.
      const read = await database.writeTxCommitted((trx) => trx.selectFrom("notes").selectAll().execute());
      expect(await settled(read.durable)).toBe(true);
      expect(control.calls).toHaveLength(2);

      const failing = await database.writeTxCommitted((trx) =>
        trx.insertInto("notes").values({ id: 3, body: "c" }).execute(),
      );
      await control.started(3);
      control.calls[2]?.reject(Object.assign(new Error("EIO: i/o error"), { code: "EIO" }));
      await expect(failing.durable).rejects.toBeInstanceOf(DurabilityError);
    },
  );

  it.skipIf(!onSqlite)("reads, through the reader or the write connection, wait for no sync", async () => {
    const { database, control } = await open();
    control.hold();
    await database.db.selectFrom("notes").selectAll().execute();
    await database.reader.selectFrom("notes").selectAll().execute();
    // A transaction that only read (BEGIN IMMEDIATE takes the write lock, writes nothing).
    await database.writeTx((trx) => trx.selectFrom("notes").selectAll().execute());
    expect(control.calls).toHaveLength(0);
  });

  it.skipIf(!onSqlite)(
    "a failed sync fails every write waiting on it and every later write, logged once without paths",
    async () => {
      const { database, control, errors } = await open();
      control.hold();
      const first = database.writeTx((trx) => trx.insertInto("notes").values({ id: 1, body: "a" }).execute());
      await control.started(1);
      const second = database.db.insertInto("notes").values({ id: 2, body: "b" }).execute();
      await expect.poll(() => ids(database)).toEqual([1, 2]);
      const eio = Object.assign(new Error(`EIO: i/o error, fdatasync '${env?.sqliteFile}-wal'`), {
        code: "EIO",
        syscall: "fdatasync",
      });
      control.calls[0]?.reject(eio);
      await expect(first).rejects.toBeInstanceOf(DurabilityError);
      await expect(second).rejects.toBeInstanceOf(DurabilityError);
      // No sync is retried ("fsyncgate"): later writes fail before they write anything.
      await expect(
        database.writeTx((trx) => trx.insertInto("notes").values({ id: 3, body: "c" }).execute()),
      ).rejects.toThrow(/could not make writes durable/);
      await expect(
        database.db.insertInto("notes").values({ id: 4, body: "d" }).execute(),
      ).rejects.toBeInstanceOf(DurabilityError);
      await expect(database.db.updateTable("notes").set({ body: "x" }).execute()).rejects.toBeInstanceOf(
        DurabilityError,
      );
      expect(control.calls).toHaveLength(1);
      expect(await ids(database)).toEqual([1, 2]);
      expect(errors).toHaveLength(1);
      expect(errors[0]?.obj).toEqual({ code: "EIO", syscall: "fdatasync" });
      expect(JSON.stringify(errors)).not.toContain(env?.dataDir);
    },
  );

  it.skipIf(!onSqlite)("runs synchronous = NORMAL and syncs the real WAL file by default", async () => {
    env = await createTestEnv("kdur");
    database = openDatabase<DB>({ sqliteFile: env.sqliteFile, sqliteCheckpointAfter: false });
    await database.migrate(migrations);
    await database.writeTx((trx) => trx.insertInto("notes").values({ id: 1, body: "a" }).execute());
    await database.db.insertInto("notes").values({ id: 2, body: "b" }).execute();
    expect(database.durability?.sync.syncs).toBeGreaterThanOrEqual(2);
    expect(database.durability?.checkpointWorker).toBe(false);
    const probe = new SQLite(env.sqliteFile, { readonly: true });
    try {
      // synchronous is per connection: the probe shows the file is in WAL mode; the kit's own
      // connection is checked through its pragma below.
      expect(probe.pragma("journal_mode", { simple: true })).toBe("wal");
    } finally {
      probe.close();
    }
    const { sql } = await import("kysely");
    const r = await sql<{ synchronous: number }>`PRAGMA synchronous`.execute(database.db);
    expect(r.rows[0]?.synchronous).toBe(1); // NORMAL
  });

  it.skipIf(!onSqlite)("an in-memory database has no WAL to sync", async () => {
    const never = () => Promise.reject(new Error("an in-memory database must not sync"));
    const d = openDatabase<DB>({ sqliteFile: ":memory:", sqliteSync: never });
    try {
      await d.migrate(migrations);
      await d.db.insertInto("notes").values({ id: 1, body: "a" }).execute();
      await d.writeTx((trx) => trx.insertInto("notes").values({ id: 2, body: "b" }).execute());
      expect(d.durability).toBeNull();
    } finally {
      await d.close();
    }
  });

  it.skipIf(!onSqlite)(
    "checkpoints from a worker thread once enough writes came, starts a long WAL over, truncates it at close",
    async () => {
      const { database } = await open({
        sqliteCheckpointAfter: 5,
        sqliteCheckpointIntervalMs: 20,
        sqliteCheckpointRestartFrames: 10,
      });
      for (let i = 1; i <= 4; i++)
        await database.db.insertInto("notes").values({ id: i, body: "x" }).execute();
      // The migration and four writes: the fifth commit starts the worker.
      expect(database.durability?.checkpointWorker).toBe(false);
      for (let i = 5; i <= 40; i++)
        await database.db
          .insertInto("notes")
          .values({ id: i, body: "x".repeat(2000) })
          .execute();
      expect(database.durability?.checkpointWorker).toBe(true);
      await expect.poll(() => database.durability?.checkpoints.frames ?? 0).toBeGreaterThan(0);
      // Writes back to back: every PASSIVE checkpoint overlaps one, so the WAL only starts over
      // through a checkpoint taken while the writes wait.
      let next = 41;
      while ((database.durability?.checkpoints.restarts ?? 0) === 0) {
        await Promise.all(
          Array.from({ length: 20 }, () =>
            database?.db
              .insertInto("notes")
              .values({ id: next++, body: "y".repeat(2000) })
              .execute(),
          ),
        );
      }
      const written = next - 1;
      const wal = `${env?.sqliteFile}-wal`;
      await database.close();
      // TRUNCATE at close, and the last connection closed removes the WAL.
      expect(!existsSync(wal) || statSync(wal).size === 0).toBe(true);
      const reopened = new SQLite(env?.sqliteFile ?? "", { readonly: true });
      try {
        expect(reopened.prepare("SELECT count(*) AS n FROM notes").get()).toEqual({ n: written });
      } finally {
        reopened.close();
      }
    },
  );
});

describe.skipIf(onSqlite)("PostgreSQL durability is the server's: nothing changes", () => {
  it("commits without any WAL sync of the kit", async () => {
    const env = await createTestEnv("kdur");
    const never = () => Promise.reject(new Error("PostgreSQL must not use the SQLite WAL sync"));
    const d = openDatabase<DB>({ url: env.databaseUrl, sqliteSync: never, sqliteCheckpointAfter: 0 });
    try {
      await d.migrate(migrations);
      await d.writeTx((trx) => trx.insertInto("notes").values({ id: 1, body: "a" }).execute());
      await d.db.insertInto("notes").values({ id: 2, body: "b" }).execute();
      // Committed is durable here: writeTxCommitted's `durable` has nothing left to wait for.
      const c = await d.writeTxCommitted((trx) =>
        trx.insertInto("notes").values({ id: 3, body: "c" }).execute(),
      );
      expect(await settled(c.durable)).toBe(true);
      expect(d.durability).toBeNull();
      expect(
        (await d.reader.selectFrom("notes").select("id").orderBy("id").execute()).map((r) => r.id),
      ).toEqual([1, 2, 3]);
    } finally {
      await d.close();
      await env.cleanup();
    }
  });
});
