import { FakeClock } from "@app/kit/clock";
import { type Database, openDatabase } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bootstrapAdmin } from "../../src/control/bootstrap.js";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";

describe("first admin: two nodes bootstrapping one database at once create one admin", () => {
  let one: Database<PlatformDB>;
  let two: Database<PlatformDB>;
  let cleanup: () => Promise<void>;
  const clock = new FakeClock("2026-11-24T12:00:00.000Z");
  const { logger } = captureLogger();

  beforeAll(async () => {
    const t = await createTestDatabase<PlatformDB>(migrations);
    one = t.database;
    // A second connection pool on the same database stands for a second process.
    two = openDatabase<PlatformDB>({ url: t.env.databaseUrl, sqliteFile: t.env.sqliteFile });
    cleanup = async () => {
      await two.close();
      await t.cleanup();
    };
  });
  afterAll(async () => cleanup());

  it("the second waits for the first (the admins lock), then finds an admin and stays inert", async () => {
    for (let round = 0; round < 3; round++) {
      await one.db.deleteFrom("admins").execute();
      const announced: string[] = [];
      const boot = (database: Database<PlatformDB>, username: string) =>
        bootstrapAdmin({
          database,
          clock,
          logger,
          username,
          password: "correct horse battery staple",
          announce: (l) => void announced.push(l),
        });
      // Different usernames: without the lock both inserts would succeed (no unique clash).
      const results = await Promise.all([boot(one, "node-a"), boot(two, "node-b")]);
      const created = results.filter((r) => r !== null);
      expect(created).toHaveLength(1);
      const admins = await one.db.selectFrom("admins").select("username").execute();
      expect(admins.map((a) => a.username)).toEqual(created);
      // Configured credentials are never announced.
      expect(announced).toEqual([]);
    }
  });

  it("does nothing once an admin exists", async () => {
    const before = await one.db.selectFrom("admins").select("id").execute();
    expect(before).toHaveLength(1);
    const r = await bootstrapAdmin({
      database: two,
      clock,
      logger,
      username: undefined,
      password: undefined,
      announce: () => {
        throw new Error("must not announce");
      },
    });
    expect(r).toBeNull();
    expect(await one.db.selectFrom("admins").select("id").execute()).toEqual(before);
  });
});
