import { afterEach, describe, expect, it } from "vitest";
import { createTestEnv, testBackend } from "../src/db/testing.js";
import {
  type Database,
  DatabaseUnavailableError,
  isDatabaseUnavailable,
  type Migration,
  OutageMonitor,
  openDatabase,
  sql,
} from "../src/db.js";
import { createHttpApp, toErrorResponse } from "../src/http.js";
import { captureLogger } from "../src/logger.js";
import { terminateBackends } from "../src/testing/outage.js";
import { startTcpProxy, type TcpProxy } from "../src/testing/tcp-proxy.js";

interface DB {
  items: { id: number; body: string };
}
const migrations: Migration[] = [
  { version: 1, name: "items", sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, body TEXT NOT NULL);" },
];

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const outageLines = (lines: string[]) =>
  lines
    .map((l) => JSON.parse(l) as { level: number; msg: string })
    .filter((l) => /^database (unavailable|reachable)/.test(l.msg));

describe("classifying database errors", () => {
  it("treats connection failures and SQLite I/O errors as unavailable, not query errors", () => {
    const withCode = (code: string, message = "x") => Object.assign(new Error(message), { code });
    for (const e of [
      withCode("ECONNREFUSED"),
      withCode("ECONNRESET"),
      withCode("57P01", "terminating connection due to administrator command"),
      withCode("08006"),
      new Error("Connection terminated unexpectedly"),
      new Error("Client has encountered a connection error and is not queryable"),
      withCode("SQLITE_IOERR_WRITE", "disk I/O error"),
      withCode("SQLITE_FULL", "database or disk is full"),
      withCode("SQLITE_CANTOPEN"),
      Object.assign(new AggregateError([withCode("ECONNREFUSED")]), {}),
    ])
      expect(isDatabaseUnavailable(e), String(e)).toBe(true);
    for (const e of [
      withCode("23505", "duplicate key"),
      withCode("42P01", "relation does not exist"),
      withCode("SQLITE_CONSTRAINT_UNIQUE"),
      new Error("boom"),
      null,
      "text",
    ])
      expect(isDatabaseUnavailable(e), String(e)).toBe(false);
  });

  it("maps a raw unavailable error that reaches the HTTP layer to 503 with Retry-After", async () => {
    expect(
      toErrorResponse(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })),
    ).toEqual({
      status: 503,
      body: {
        error: {
          code: "database_unavailable",
          message: "The database cannot be reached; try again shortly.",
          retry_after_s: 5,
        },
      },
      headers: { "retry-after": "5" },
    });
    const cap = captureLogger();
    const app = createHttpApp({ logger: cap.logger });
    app.get("/x", async () => {
      throw new Error("Connection terminated unexpectedly");
    });
    const res = await app.inject({ url: "/x" });
    expect(res.statusCode).toBe(503);
    expect(res.headers["retry-after"]).toBe("5");
    expect(res.json().error.code).toBe("database_unavailable");
    // Not a stack per request: the database layer logs the outage once.
    expect(cap.text()).not.toMatch(/request failed|"stack"/);
    await app.close();
  });

  it("logs one line when an outage starts and one when the database answers again", () => {
    let t = 0;
    const warn: string[] = [];
    const m = new OutageMonitor(
      { warn: (o, msg) => warn.push(`${msg} ${JSON.stringify(o)}`) },
      () => t,
      1000,
    );
    m.succeeded();
    for (let i = 0; i < 50; i++) m.failed(Object.assign(new Error("x"), { code: "ECONNREFUSED" }));
    expect(m.down).toBe(true);
    t = 500;
    m.succeeded(); // a fresh connection while others still fail: not yet recovered
    expect(m.down).toBe(true);
    t = 1600;
    m.succeeded();
    expect(m.down).toBe(false);
    expect(warn).toEqual([
      'database unavailable: answering 503 database_unavailable until it is back {"reason":"ECONNREFUSED"}',
      'database reachable again {"down_ms":1600}',
    ]);
    expect(m.outages).toBe(1);
  });
});

describe.runIf(testBackend() === "sqlite")("SQLite I/O failure", () => {
  it("a write that hits a full database is 503 database_unavailable, logged once, and recovers", async () => {
    const env = await createTestEnv("outage");
    cleanups.push(env.cleanup);
    const cap = captureLogger();
    let t = 0;
    const database = openDatabase<DB>({ sqliteFile: env.sqliteFile, logger: cap.logger, now: () => t });
    cleanups.push(() => database.close());
    await database.migrate(migrations);
    const pages = await sql<{ page_count: number }>`PRAGMA page_count`.execute(database.db);
    // SQLite refuses to grow the file past this: every page-allocating write fails with SQLITE_FULL.
    await sql.raw(`PRAGMA max_page_count = ${pages.rows[0]?.page_count}`).execute(database.db);
    const big = "x".repeat(64 * 1024);
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        database.writeTx((trx) => trx.insertInto("items").values({ id: i, body: big }).execute()),
      ),
    );
    for (const r of results) {
      expect(r.status).toBe("rejected");
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(DatabaseUnavailableError);
    }
    // Reads keep working meanwhile.
    await database.reader.selectFrom("items").selectAll().execute();
    t = 5000;
    await sql.raw("PRAGMA max_page_count = 1073741823").execute(database.db);
    await database.writeTx((trx) => trx.insertInto("items").values({ id: 100, body: big }).execute());
    expect(database.outage.down).toBe(false);
    const lines = outageLines(cap.lines);
    expect(lines.map((l) => [l.level, l.msg.split(":")[0]])).toEqual([
      [40, "database unavailable"],
      [40, "database reachable again"],
    ]);
  });
});

describe.runIf(testBackend() === "postgres")("PostgreSQL going away", () => {
  let proxy: TcpProxy;
  let database: Database<DB>;
  let cap: ReturnType<typeof captureLogger>;
  let t = 0;
  let dbUrl: string;

  const open = async () => {
    const env = await createTestEnv("outage");
    cleanups.push(env.cleanup);
    dbUrl = env.databaseUrl as string;
    const u = new URL(dbUrl);
    proxy = await startTcpProxy({ host: u.hostname, port: Number(u.port || 5432) });
    cleanups.push(() => proxy.stop());
    cap = captureLogger();
    t = 0;
    database = openDatabase<DB>({ url: proxy.rewrite(dbUrl), logger: cap.logger, now: () => t, poolSize: 4 });
    cleanups.push(() => database.close());
    await database.migrate(migrations);
  };

  const fill = async () => {
    // Several pooled connections, idle afterwards.
    await Promise.all(Array.from({ length: 4 }, () => sql`SELECT pg_sleep(0.02)`.execute(database.db)));
  };

  for (const how of ["cut", "stopped"] as const) {
    it(`pool and transaction in flight: ${how} mid-load answers DatabaseUnavailableError, never crashes, recovers`, async () => {
      await open();
      await fill();
      // A transaction holds its connection across an await when the connection dies.
      let inTx!: () => void;
      const entered = new Promise<void>((r) => (inTx = r));
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const tx = database.writeTx(async (trx) => {
        await trx.insertInto("items").values({ id: 1, body: "a" }).execute();
        inTx();
        await gate;
        await trx.insertInto("items").values({ id: 2, body: "b" }).execute();
      });
      await entered;
      const load = Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          database.db
            .insertInto("items")
            .values({ id: 10 + i, body: "x" })
            .execute(),
        ),
      );
      if (how === "cut") await proxy.stop();
      else {
        await proxy.stop();
        await terminateBackends(dbUrl);
      }
      release();
      await expect(tx).rejects.toBeInstanceOf(DatabaseUnavailableError);
      for (const r of await load)
        if (r.status === "rejected") expect(r.reason).toBeInstanceOf(DatabaseUnavailableError);
      for (let i = 0; i < 10; i++)
        await expect(sql`SELECT 1`.execute(database.db)).rejects.toBeInstanceOf(DatabaseUnavailableError);
      expect(database.outage.down).toBe(true);

      await proxy.start();
      t = 10_000;
      await sql`SELECT 1`.execute(database.db);
      expect(database.outage.down).toBe(false);
      // The transaction in flight rolled back as a whole.
      const rows = await database.db.selectFrom("items").select("id").where("id", "<", 10).execute();
      expect(rows).toEqual([]);
      expect(outageLines(cap.lines).map((l) => [l.level, l.msg.split(":")[0]])).toEqual([
        [40, "database unavailable"],
        [40, "database reachable again"],
      ]);
    });
  }

  it("idle pooled connections cut abruptly do not crash the process; the next query reconnects", async () => {
    await open();
    await fill();
    proxy.cut();
    // The idle clients' errors are heard (no unhandled 'error' event) and they leave the pool.
    await expect.poll(() => database.outage.down).toBe(true);
    t = 10_000;
    const r = await sql<{ one: number }>`SELECT 1 AS one`.execute(database.db);
    expect(r.rows[0]?.one).toBe(1);
    expect(database.outage.down).toBe(false);
  });

  for (const how of ["cut", "stopped"] as const) {
    it(`the LISTEN connection reconnects after being ${how} and hears notifications again`, async () => {
      await open();
      const heard: string[] = [];
      await database.notifier.subscribe("outage_test", (p) => heard.push(p));
      await database.notifier.publish("outage_test", "before");
      await expect.poll(() => heard).toEqual(["before"]);
      await proxy.stop();
      if (how === "stopped") await terminateBackends(dbUrl);
      await expect(database.notifier.publish("outage_test", "lost")).rejects.toBeDefined();
      await proxy.start();
      // Published until the re-LISTENed connection hears one (reconnect has a backoff).
      let n = 0;
      await expect
        .poll(async () => {
          await database.notifier.publish("outage_test", `after-${n++}`);
          return heard.some((h) => h.startsWith("after-"));
        })
        .toBe(true);
    });
  }
});
