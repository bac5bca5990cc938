import { afterEach, describe, expect, it } from "vitest";
import { createTestDatabase } from "../src/db/testing.js";
import { sql } from "../src/db.js";

interface DB {
  notes: { id: number; body: string };
}
const migrations = [
  { version: 1, name: "notes", sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);" },
];

describe("database.reader", () => {
  let cleanup: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await cleanup?.();
    cleanup = null;
  });

  it("reads committed rows without waiting behind an open write transaction", async () => {
    const t = await createTestDatabase<DB>(migrations, { acquireTimeoutMs: 2_000 });
    cleanup = t.cleanup;
    const { database } = t;
    await database.db.insertInto("notes").values({ id: 1, body: "committed" }).execute();

    let releaseWriter!: () => void;
    const writerHolds = new Promise<void>((r) => {
      releaseWriter = r;
    });
    let inTx!: () => void;
    const entered = new Promise<void>((r) => {
      inTx = r;
    });
    const tx = database.writeTx(async (trx) => {
      await trx.insertInto("notes").values({ id: 2, body: "uncommitted" }).execute();
      inTx();
      await writerHolds;
    });
    await entered;
    // The write transaction still holds the writer: the reader answers from the last commit.
    const rows = await database.reader.selectFrom("notes").select(["id", "body"]).orderBy("id").execute();
    expect(rows).toEqual([{ id: 1, body: "committed" }]);
    releaseWriter();
    await tx;
    const after = await database.reader.selectFrom("notes").select("id").orderBy("id").execute();
    expect(after.map((r) => r.id)).toEqual([1, 2]);
  });

  it("refuses writes and transactions", async () => {
    const t = await createTestDatabase<DB>(migrations);
    cleanup = t.cleanup;
    if (t.database.backend !== "sqlite") return; // PostgreSQL's reader is the pool itself
    await expect(
      t.database.reader.insertInto("notes").values({ id: 3, body: "x" }).execute(),
    ).rejects.toThrow();
    await expect(t.database.reader.transaction().execute(async () => {})).rejects.toThrow(/writeTx/);
  });

  it("serves a repeated statement many times (prepared once, cached)", async () => {
    const t = await createTestDatabase<DB>(migrations);
    cleanup = t.cleanup;
    await t.database.db.insertInto("notes").values({ id: 1, body: "a" }).execute();
    for (let i = 0; i < 300; i++) {
      const r = await sql<{ n: number }>`SELECT count(*) AS n FROM notes WHERE id <= ${i}`.execute(
        t.database.reader,
      );
      expect(Number(r.rows[0]?.n)).toBe(i >= 1 ? 1 : 0);
    }
  });
});
