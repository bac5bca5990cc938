import SQLite from "better-sqlite3";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createTestDatabase, createTestEnv, testBackend } from "../src/db/testing.js";
import { type Database, type Migration, openDatabase, sql } from "../src/db.js";
import { DbBusyError } from "../src/errors.js";

interface DB {
  items: { id: string; n: number; flag: number; data: unknown; at: string };
}

const m1: Migration = {
  version: 1,
  name: "items",
  sql: `CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER NOT NULL, flag {{bool}} NOT NULL DEFAULT 0, data {{json}}, at {{timestamp}} NOT NULL);
CREATE UNIQUE INDEX items_n ON items (n);`,
};
const m2: Migration = { version: 2, name: "more", sql: "CREATE TABLE more (id TEXT PRIMARY KEY);" };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function fresh(
  migrations: Migration[] = [m1],
  opts: { acquireTimeoutMs?: number; poolSize?: number } = {},
) {
  const t = await createTestDatabase<DB>(migrations, opts);
  cleanups.push(t.cleanup);
  return t;
}

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe(`database on ${testBackend()}`, () => {
  it("round-trips ISO timestamps, 0/1 booleans and JSON the same way on both backends", async () => {
    const { database } = await fresh();
    const { db, dialect } = database;
    await db
      .insertInto("items")
      .values({
        id: "a",
        n: 1,
        flag: 1,
        data: dialect.json({ x: [1, "two"] }),
        at: "2026-11-21T13:37:00.123Z",
      })
      .execute();
    const row = await db.selectFrom("items").selectAll().executeTakeFirstOrThrow();
    expect(row.flag).toBe(1);
    expect(dialect.fromJson(row.data)).toEqual({ x: [1, "two"] });
    // A JSON string that looks like a number stays a string on both backends.
    await db
      .updateTable("items")
      .set({ data: dialect.json("2026") })
      .execute();
    const again = await db.selectFrom("items").select("data").executeTakeFirstOrThrow();
    expect(dialect.fromJson(again.data)).toBe("2026");
    expect(dialect.fromTimestamp(row.at)).toBe("2026-11-21T13:37:00.123Z");
    const later = await db
      .selectFrom("items")
      .select("id")
      .where("at", ">", "2026-11-21T13:00:00.000Z")
      .execute();
    expect(later).toHaveLength(1);
    const count = await db
      .selectFrom("items")
      .select((eb) => eb.fn.countAll<number>().as("c"))
      .executeTakeFirstOrThrow();
    expect(count.c).toBe(1);
  });

  it("detects unique violations on both backends", async () => {
    const { database } = await fresh();
    const row = { id: "a", n: 1, flag: 0, data: null, at: "2026-01-01T00:00:00.000Z" };
    await database.db.insertInto("items").values(row).execute();
    const err = await database.db
      .insertInto("items")
      .values({ ...row, id: "b" })
      .execute()
      .catch((e: unknown) => e);
    expect(database.dialect.isUniqueViolation(err)).toBe(true);
  });

  it("rolls a write transaction back completely when it throws", async () => {
    const { database } = await fresh();
    await expect(
      database.writeTx(async (trx) => {
        await trx
          .insertInto("items")
          .values({ id: "a", n: 1, flag: 0, data: null, at: "2026-01-01T00:00:00.000Z" })
          .execute();
        throw new Error("abort");
      }),
    ).rejects.toThrow("abort");
    expect(await database.db.selectFrom("items").selectAll().execute()).toEqual([]);
  });

  // SQLite's one connection: its wait bound is ours. (pg-pool arms its own idle timers on release.)
  it.skipIf(testBackend() === "postgres")(
    "arms no timer to hand over a free connection (statements and transactions)",
    async () => {
      const { database } = await fresh([m1], { acquireTimeoutMs: 100, poolSize: 1 });
      await database.db.selectFrom("items").selectAll().execute();
      const spy = vi.spyOn(globalThis, "setTimeout");
      try {
        for (let n = 0; n < 20; n++)
          await database.db
            .insertInto("items")
            .values({ id: `t${n}`, n, flag: 0, data: null, at: "2026-11-21T13:37:00.123Z" })
            .execute();
        for (let n = 20; n < 25; n++)
          await database.writeTx((trx) =>
            trx
              .insertInto("items")
              .values({ id: `t${n}`, n, flag: 0, data: null, at: "2026-11-21T13:37:00.123Z" })
              .execute(),
          );
        expect(spy).not.toHaveBeenCalled();
      } finally {
        spy.mockRestore();
      }
      expect(await database.db.selectFrom("items").select("id").execute()).toHaveLength(25);
    },
  );

  it("raises DbBusyError (503 + Retry-After) when no connection frees up in time", async () => {
    const env = await createTestEnv("kdb");
    cleanups.push(env.cleanup);
    const database = openDatabase<DB>({
      url: env.databaseUrl,
      sqliteFile: env.sqliteFile,
      acquireTimeoutMs: 100,
      poolSize: 1,
    });
    cleanups.push(() => database.close());
    // Open the one connection first. On a loaded machine setting it up (a PostgreSQL backend
    // process) can itself take longer than the bound, which is no wait for a busy pool: try again
    // until it is open, so the DbBusyError below can only come from waiting behind the holder.
    for (;;) {
      try {
        await database.migrate([m1]);
        break;
      } catch (err) {
        if (!(err instanceof DbBusyError)) throw err;
      }
    }
    const release = deferred();
    const entered = deferred();
    const holder = database.writeTx(async () => {
      entered.resolve();
      await release.promise;
    });
    await entered.promise;
    const err = await database.db
      .selectFrom("items")
      .selectAll()
      .execute()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DbBusyError);
    expect((err as DbBusyError).status).toBe(503);
    expect((err as DbBusyError).headers["retry-after"]).toBeDefined();
    release.resolve();
    await holder;
    // The connection that arrived after the timeout was handed back: the database still works.
    expect(await database.db.selectFrom("items").selectAll().execute()).toEqual([]);
  });
});

describe.skipIf(testBackend() !== "postgres")("PostgreSQL sessions", () => {
  it("plan every run of a named statement (a generic plan made the feed 3x slower)", async () => {
    const { database } = await fresh([m1]);
    const r = await sql<{ plan_cache_mode: string }>`SHOW plan_cache_mode`.execute(database.db);
    expect(r.rows[0]?.plan_cache_mode).toBe("force_custom_plan");
  });
});

describe(`migrations on ${testBackend()}`, () => {
  it("applies pending migrations once; a re-run is a no-op", async () => {
    const { database } = await fresh([]);
    expect(await database.migrate([m1, m2])).toEqual({ applied: [1, 2], current: 2 });
    expect(await database.migrate([m1, m2])).toEqual({ applied: [], current: 2 });
    const rows = await sql<{
      version: number;
    }>`SELECT version FROM schema_migrations ORDER BY version`.execute(database.db);
    expect(rows.rows.map((r) => Number(r.version))).toEqual([1, 2]);
  });

  it("refuses a gap before running anything", async () => {
    const { database } = await fresh([]);
    await expect(database.migrate([m1, { ...m2, version: 3 }])).rejects.toThrow(/out of sequence/);
    const tables = await database.db
      .selectFrom("items")
      .selectAll()
      .execute()
      .catch((e: unknown) => e);
    expect(tables).toBeInstanceOf(Error); // m1 did not run either
  });

  it("refuses an applied migration whose text was edited, and a database newer than the code", async () => {
    const { database } = await fresh([m1]);
    await expect(database.migrate([{ ...m1, sql: `${m1.sql}\n-- edited` }])).rejects.toThrow(
      /edited after it was applied/,
    );
    await database.migrate([m1, m2]);
    await expect(database.migrate([m1])).rejects.toThrow(/newer than the code/);
  });

  it("rolls back a failing migration and records nothing for it", async () => {
    const { database } = await fresh([m1]);
    const bad: Migration = {
      version: 2,
      name: "bad",
      sql: "CREATE TABLE ok_part (id TEXT);\nTHIS IS NOT SQL;",
    };
    await expect(database.migrate([m1, bad])).rejects.toThrow();
    const rows = await sql<{ version: number }>`SELECT version FROM schema_migrations`.execute(database.db);
    expect(rows.rows.map((r) => Number(r.version))).toEqual([1]);
    const partial = await sql`SELECT * FROM ok_part`.execute(database.db).catch((e: unknown) => e);
    expect(partial).toBeInstanceOf(Error);
  });

  it.runIf(testBackend() === "postgres")(
    "lets two processes start at once: each migration runs exactly once",
    async () => {
      const env = await createTestEnv("kmig");
      cleanups.push(env.cleanup);
      const slow: Migration = {
        version: 2,
        name: "slow",
        // real-time: keeps the first migrator inside its migration (a statement offers no hook),
        // so the second process meets the migration lock rather than an already migrated schema.
        sql: "SELECT pg_sleep(0.3); CREATE TABLE more (id TEXT PRIMARY KEY);",
      };
      const a = openDatabase({ url: env.databaseUrl });
      const b = openDatabase({ url: env.databaseUrl });
      cleanups.push(async () => {
        await a.close();
        await b.close();
      });
      const [ra, rb] = await Promise.all([a.migrate([m1, slow]), b.migrate([m1, slow])]);
      expect([...ra.applied, ...rb.applied].sort()).toEqual([1, 2]);
      const rows = await sql<{
        version: number;
      }>`SELECT version FROM schema_migrations ORDER BY version`.execute(a.db);
      expect(rows.rows.map((r) => Number(r.version))).toEqual([1, 2]);
    },
  );
});

describe(`locking on ${testBackend()}`, () => {
  it("a FOR SHARE reader blocks a concurrent writer of that row until it commits", async () => {
    const { database, env } = await fresh();
    await database.db
      .insertInto("items")
      .values({ id: "ev", n: 1, flag: 0, data: null, at: "2026-01-01T00:00:00.000Z" })
      .execute();
    const order: string[] = [];
    const release = deferred();
    const locked = deferred();
    const reader = database.writeTx(async (trx) => {
      await database.dialect.forShare(trx.selectFrom("items").selectAll().where("id", "=", "ev")).execute();
      locked.resolve();
      await release.promise;
      order.push("reader-commit");
    });
    await locked.promise;

    if (database.backend === "postgres") {
      const other = openDatabase<DB>({ url: env.databaseUrl });
      cleanups.push(() => other.close());
      const writer = other
        .writeTx((trx) => trx.updateTable("items").set({ flag: 1 }).where("id", "=", "ev").execute())
        .then(() => order.push("writer-done"));
      // Wait until PostgreSQL reports the writer waiting on a lock (a condition, not a sleep).
      for (;;) {
        const w = await sql<{ n: number }>`SELECT count(*)::int AS n FROM pg_stat_activity
          WHERE wait_event_type = 'Lock' AND datname = current_database()`.execute(database.db);
        if (Number(w.rows[0]?.n) > 0) break;
      }
      expect(order).toEqual([]);
      release.resolve();
      await Promise.all([reader, writer]);
    } else {
      // Another process (connection) cannot even begin a write while the reader's transaction holds.
      const raw = new SQLite(env.sqliteFile);
      raw.pragma("busy_timeout = 0");
      expect(() => raw.exec("BEGIN IMMEDIATE")).toThrow(/locked|busy/i);
      // And a writer in this process queues behind it.
      const writer = database
        .writeTx((trx) => trx.updateTable("items").set({ flag: 1 }).where("id", "=", "ev").execute())
        .then(() => order.push("writer-done"));
      expect(order).toEqual([]);
      release.resolve();
      await Promise.all([reader, writer]);
      raw.exec("BEGIN IMMEDIATE");
      raw.exec("ROLLBACK");
      raw.close();
    }
    expect(order).toEqual(["reader-commit", "writer-done"]);
    const row = await database.db.selectFrom("items").select("flag").executeTakeFirstOrThrow();
    expect(row.flag).toBe(1);
  });
});

describe(`notifier on ${testBackend()}`, () => {
  it("delivers a published message to every subscriber, across connections", async () => {
    const { database, env } = await fresh();
    let other: Database<DB> = database;
    if (database.backend === "postgres") {
      other = openDatabase<DB>({ url: env.databaseUrl });
      cleanups.push(() => other.close());
    }
    const got: string[] = [];
    const both = new Promise<void>((resolve) => {
      const push = (who: string) => (p: string) => {
        got.push(`${who}:${p}`);
        if (got.length === 2) resolve();
      };
      void database.notifier.subscribe("route_changes", push("a"));
      void other.notifier.subscribe("route_changes", push("b"));
    });
    // Subscriptions are set up before publishing.
    await database.notifier.subscribe("noop", () => {});
    await other.notifier.subscribe("noop", () => {});
    await database.notifier.publish("route_changes", "v2");
    await both;
    expect(got.sort()).toEqual(["a:v2", "b:v2"]);
    await expect(database.notifier.publish("Bad-Channel", "x")).rejects.toThrow(
      /invalid notification channel/,
    );
  });
});
