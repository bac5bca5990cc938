import { afterEach, describe, expect, it } from "vitest";
import { createTestEnv } from "../src/db/testing.js";
import { type Migration, openDatabase } from "../src/db.js";
import { captureLogger } from "../src/logger.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe("migration log lines", () => {
  it("logs each applied migration once, without repeating the logger's name key", async () => {
    const env = await createTestEnv("miglog");
    cleanups.push(env.cleanup);
    const cap = captureLogger("svc");
    const database = openDatabase({ url: env.databaseUrl, sqliteFile: env.sqliteFile, logger: cap.logger });
    cleanups.push(() => database.close());
    const migrations: Migration[] = [
      { version: 1, name: "first", sql: "CREATE TABLE a (id INTEGER PRIMARY KEY);" },
      { version: 2, name: "second", sql: "CREATE TABLE b (id INTEGER PRIMARY KEY);" },
    ];
    await database.migrate(migrations);
    await database.migrate(migrations);
    const lines = cap.lines.map((l) => JSON.parse(l)).filter((l) => l.msg === "migration applied");
    expect(lines.map((l) => [l.name, l.migration, l.migration_name, l.level])).toEqual([
      ["svc", 1, "first", 30],
      ["svc", 2, "second", 30],
    ]);
  });
});
