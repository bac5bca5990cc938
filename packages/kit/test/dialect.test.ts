import type { Kysely } from "kysely";
import { describe, expect, it } from "vitest";
import { Dialect } from "../src/db.js";

// A handle is only asked whether it is a Kysely transaction.
const handle = (isTransaction: boolean) => ({ isTransaction }) as unknown as Kysely<unknown>;

describe("the dialect's backend differences", () => {
  it("PostgreSQL: shared by processes, autocommit writes, grouped reads; a transaction only inside one", () => {
    const pg = new Dialect("postgres");
    expect([pg.sharedByProcesses, pg.autocommitWrites, pg.groupsReads]).toEqual([true, true, true]);
    expect(pg.inTransaction(handle(false))).toBe(false);
    expect(pg.inTransaction(handle(true))).toBe(true);
  });

  it("SQLite: one process, writes only in writeTx, no grouped reads; every write handle is in a transaction", () => {
    const lite = new Dialect("sqlite");
    expect([lite.sharedByProcesses, lite.autocommitWrites, lite.groupsReads]).toEqual([false, false, false]);
    expect(lite.inTransaction(handle(false))).toBe(true);
    expect(lite.inTransaction(handle(true))).toBe(true);
  });
});
