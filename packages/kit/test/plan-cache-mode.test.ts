import { afterEach, describe, expect, it } from "vitest";
import { createTestEnv, testBackend } from "../src/db/testing.js";
import { type Database, openDatabase, preparedQuery, sql } from "../src/db.js";

interface DB {
  items: { id: string; n: number };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A one-connection database (so every run of a named statement meets the same session). */
async function open(planCacheMode?: "auto" | "force_custom_plan"): Promise<Database<DB>> {
  const env = await createTestEnv("kplan");
  const database = openDatabase<DB>({
    url: env.databaseUrl,
    sqliteFile: env.sqliteFile,
    poolSize: 1,
    ...(planCacheMode ? { planCacheMode } : {}),
  });
  cleanups.push(async () => {
    await database.close();
    await env.cleanup();
  });
  await database.migrate([
    { version: 1, name: "items", sql: "CREATE TABLE items (id TEXT PRIMARY KEY, n INTEGER NOT NULL);" },
  ]);
  await database.db
    .insertInto("items")
    .values(Array.from({ length: 50 }, (_, i) => ({ id: `i${i}`, n: i })))
    .execute();
  return database;
}

const byId = preparedQuery((db: import("kysely").Kysely<DB>, p: { id: string }) =>
  db.selectFrom("items").select("n").where("id", "=", p.id),
);

/** Runs the named statement `runs` times, then reads how its plans were made in this session. */
async function plansAfter(database: Database<DB>, runs: number) {
  for (let i = 0; i < runs; i++) expect(await byId(database.db, { id: `i${i}` })).toEqual([{ n: i }]);
  const r = await sql<{ generic_plans: number; custom_plans: number }>`
    SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '/*prepared*/%'`.execute(
    database.db,
  );
  expect(r.rows).toHaveLength(1);
  return { generic: Number(r.rows[0]?.generic_plans), custom: Number(r.rows[0]?.custom_plans) };
}

describe.skipIf(testBackend() !== "postgres")("PostgreSQL plan_cache_mode", () => {
  it("plans every run of a named statement by default", async () => {
    const database = await open();
    expect(
      (await sql<{ m: string }>`SELECT current_setting('plan_cache_mode') AS m`.execute(database.db)).rows,
    ).toEqual([{ m: "force_custom_plan" }]);
    expect(await plansAfter(database, 8)).toEqual({ generic: 0, custom: 8 });
  });

  it("planCacheMode auto keeps a generic plan of a key lookup after five custom ones", async () => {
    const database = await open("auto");
    expect(
      (await sql<{ m: string }>`SELECT current_setting('plan_cache_mode') AS m`.execute(database.db)).rows,
    ).toEqual([{ m: "auto" }]);
    expect(await plansAfter(database, 8)).toEqual({ generic: 3, custom: 5 });
  });
});
