import { afterEach, describe, expect, it } from "vitest";
import { createTestDatabase } from "../src/db/testing.js";
import { isPostgres, type Kysely, PREPARED_MARK, preparedQuery, sql } from "../src/db.js";

interface DB {
  notes: { id: number; author: string; body: string; hidden: number };
}
const migrations = [
  {
    version: 1,
    name: "notes",
    sql: "CREATE TABLE notes (id INTEGER PRIMARY KEY, author TEXT NOT NULL, body TEXT NOT NULL, hidden INTEGER NOT NULL);",
  },
];

describe("preparedQuery", () => {
  let cleanup: (() => Promise<void>) | null = null;
  afterEach(async () => {
    await cleanup?.();
    cleanup = null;
  });

  async function seeded(poolSize?: number) {
    const t = await createTestDatabase<DB>(migrations, poolSize ? { poolSize } : {});
    cleanup = t.cleanup;
    await t.database.db
      .insertInto("notes")
      .values([
        { id: 1, author: "ann", body: "a1", hidden: 0 },
        { id: 2, author: "bob", body: "b1", hidden: 0 },
        { id: 3, author: "ann", body: "a2", hidden: 1 },
        { id: 4, author: "cat", body: "c1", hidden: 0 },
      ])
      .execute();
    return t.database;
  }

  // Optional author filter (two shapes), a literal the builder binds itself (hidden = 0) and a limit.
  const notes = preparedQuery((db: Kysely<DB>, p: { limit: number; author?: string }) => {
    let q = db.selectFrom("notes").select(["id", "body"]).where("hidden", "=", 0);
    if ("author" in p) q = q.where("author", "=", p.author as string);
    return q.orderBy("id").limit(p.limit);
  });

  it("binds each call's values into the statement compiled once per shape", async () => {
    const database = await seeded();
    const { reader } = database;
    expect(await notes(reader, { limit: 10 }, "all")).toEqual([
      { id: 1, body: "a1" },
      { id: 2, body: "b1" },
      { id: 4, body: "c1" },
    ]);
    expect(await notes(reader, { limit: 2 }, "all")).toEqual([
      { id: 1, body: "a1" },
      { id: 2, body: "b1" },
    ]);
    expect(await notes(reader, { limit: 10, author: "ann" }, "author")).toEqual([{ id: 1, body: "a1" }]);
    expect(await notes(reader, { limit: 10, author: "cat" }, "author")).toEqual([{ id: 4, body: "c1" }]);
    // The literal stays bound: the hidden note of ann never shows.
    expect(await notes(database.db, { limit: 10, author: "ann" }, "author")).toEqual([{ id: 1, body: "a1" }]);
  });

  it("takes one array value for an IN list of any length", async () => {
    const database = await seeded();
    const byIds = preparedQuery((db: Kysely<DB>, p: { ids: unknown }) =>
      db
        .selectFrom("notes")
        .select("id")
        .where(
          isPostgres(db)
            ? sql<boolean>`id = any(${p.ids}::int[])`
            : sql<boolean>`id in (select value from json_each(${p.ids}))`,
        )
        .orderBy("id"),
    );
    const list = (ids: number[]) => (database.backend === "postgres" ? ids : JSON.stringify(ids));
    expect(await byIds(database.reader, { ids: list([4, 1]) })).toEqual([{ id: 1 }, { id: 4 }]);
    expect(await byIds(database.reader, { ids: list([2, 3, 4]) })).toEqual([{ id: 2 }, { id: 3 }, { id: 4 }]);
    expect(await byIds(database.reader, { ids: list([]) })).toEqual([]);
  });

  it("takes a raw sql template too (the same placeholder may appear more than once)", async () => {
    const database = await seeded();
    const raw = preparedQuery(
      (_db: Kysely<DB>, p: { author: string }) =>
        sql<{
          body: string;
        }>`SELECT body FROM notes WHERE author = ${p.author} OR body = ${p.author} ORDER BY id`,
    );
    expect(await raw(database.db, { author: "ann" })).toEqual([{ body: "a1" }, { body: "a2" }]);
    expect(await raw(database.db, { author: "c1" })).toEqual([{ body: "c1" }]);
  });

  it("refuses a placeholder the builder transformed instead of binding it", async () => {
    const database = await seeded();
    const bad = preparedQuery((db: Kysely<DB>, p: { author: string }) =>
      db.selectFrom("notes").select("id").where("author", "=", `${p.author}%`),
    );
    await expect(bad(database.reader, { author: "ann" })).rejects.toThrow(/transformed/);
  });

  it("runs as a named prepared statement on PostgreSQL", async () => {
    const database = await seeded(1);
    const rows = await notes(database.db, { limit: 1 }, "all");
    expect(rows).toEqual([{ id: 1, body: "a1" }]);
    if (database.backend !== "postgres") return;
    // One pooled connection: the statement it prepared is listed in its session.
    const prepared = await sql<{
      name: string;
      statement: string;
    }>`SELECT name, statement FROM pg_prepared_statements`.execute(database.db);
    const mine = prepared.rows.filter((r) => r.statement.startsWith(PREPARED_MARK));
    expect(mine).toHaveLength(1);
    expect(mine[0]?.name).toMatch(/^kq_[0-9a-f]{20}$/);
    // Called again with other values it reuses that statement (still exactly one).
    expect(await notes(database.db, { limit: 3 }, "all")).toHaveLength(3);
    const again = await sql<{ name: string }>`SELECT name FROM pg_prepared_statements`.execute(database.db);
    expect(again.rows.filter((r) => r.name.startsWith("kq_"))).toHaveLength(1);
  });
});
