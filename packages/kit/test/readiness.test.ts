import { afterEach, describe, expect, it } from "vitest";
import { DurabilityError, openDatabase } from "../src/db/database.js";
import { createTestDatabase, createTestEnv, testBackend } from "../src/db/testing.js";
import type { Migration } from "../src/db.js";
import { createHttpApp, registerHealth } from "../src/http/app.js";
import { registerReadiness } from "../src/http/readiness.js";
import { captureLogger } from "../src/logger.js";

const m1: Migration = { version: 1, name: "items", sql: "CREATE TABLE items (id TEXT PRIMARY KEY);" };
const m2: Migration = { version: 2, name: "more", sql: "CREATE TABLE more (id TEXT PRIMARY KEY);" };

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(applied: Migration[], shipped: Migration[]) {
  const t = await createTestDatabase(applied);
  cleanups.push(t.cleanup);
  const app = createHttpApp({ logger: captureLogger().logger });
  registerHealth(app);
  registerReadiness(app, { database: t.database, migrations: shipped });
  cleanups.push(() => app.close());
  return { app, database: t.database };
}

const expectNotReady = (
  res: { statusCode: number; headers: Record<string, unknown>; json(): unknown },
  code: string,
) => {
  expect(res.statusCode).toBe(503);
  expect(res.headers["retry-after"]).toBe("5");
  expect(res.json()).toEqual({ error: { code, message: expect.any(String), retry_after_s: 5 } });
};

describe(`GET /readyz on ${testBackend()}`, () => {
  it("answers 200 ok when the database answers and every migration is applied", async () => {
    const { app } = await setup([m1, m2], [m1, m2]);
    const res = await app.inject({ method: "GET", url: "/readyz" });
    expect(res.statusCode).toBe(200);
    expect(res.body).toBe("ok");
    expect(res.headers["content-type"]).toMatch(/^text\/plain/);
  });

  it("answers 503 migrations_pending while a shipped migration is not applied", async () => {
    const { app, database } = await setup([m1], [m1, m2]);
    expectNotReady(await app.inject({ method: "GET", url: "/readyz" }), "migrations_pending");
    await database.migrate([m1, m2]);
    expect((await app.inject({ method: "GET", url: "/readyz" })).statusCode).toBe(200);
  });

  it("answers 503 migrations_mismatch when the database is newer than the code", async () => {
    const { app } = await setup([m1, m2], [m1]);
    expectNotReady(await app.inject({ method: "GET", url: "/readyz" }), "migrations_mismatch");
  });

  it("answers 503 database_unavailable once the database is gone; /healthz stays 200", async () => {
    const { app, database } = await setup([m1], [m1]);
    await database.close();
    expectNotReady(await app.inject({ method: "GET", url: "/readyz" }), "database_unavailable");
    expect((await app.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
  });

  // PostgreSQL has no kit-side WAL sync (its durability counters are null; db-durability.test.ts).
  it.skipIf(testBackend() !== "sqlite")(
    "answers 503 database_not_durable once a sync of the SQLite WAL failed; /healthz stays 200",
    async () => {
      const env = await createTestEnv("kready");
      cleanups.push(env.cleanup);
      let fail = false;
      const database = openDatabase<{ items: { id: string } }>({
        sqliteFile: env.sqliteFile,
        sqliteSync: async () => {
          if (fail) throw Object.assign(new Error("EIO: i/o error"), { code: "EIO" });
        },
        sqliteCheckpointAfter: false,
        logger: { error: () => {} },
      });
      cleanups.push(() => database.close());
      await database.migrate([m1]);
      const app = createHttpApp({ logger: captureLogger().logger });
      registerHealth(app);
      registerReadiness(app, { database, migrations: [m1] });
      cleanups.push(() => app.close());
      await database.db.insertInto("items").values({ id: "a" }).execute();
      expect((await app.inject({ method: "GET", url: "/readyz" })).statusCode).toBe(200);
      fail = true;
      await expect(database.db.insertInto("items").values({ id: "b" }).execute()).rejects.toBeInstanceOf(
        DurabilityError,
      );
      expectNotReady(await app.inject({ method: "GET", url: "/readyz" }), "database_not_durable");
      expect((await app.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
    },
  );
});
