import { createTestDatabase } from "@app/kit/db/testing";
import { describe, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";

describe("data-plane migration", () => {
  it("creates the data tables on this backend and keeps JSON text exact", async () => {
    const { database, cleanup } = await createTestDatabase<PlatformDB>(migrations);
    try {
      const now = "2026-11-21T12:00:00.000Z";
      await database.db
        .insertInto("kv_entries")
        .values({ app_id: "a", collection: "c", key: "k", value: JSON.stringify("plain"), updated_at: now })
        .execute();
      await database.db
        .insertInto("outbox")
        .values({
          id: "o1",
          app_id: "a",
          source_kind: "http",
          trigger_id: null,
          script_id: "s",
          payload: database.dialect.json({ b: 1, a: 2 }),
          due_at: now,
          principal: null,
          reply_to: null,
          created_at: now,
        })
        .execute();
      const kv = await database.db.selectFrom("kv_entries").selectAll().executeTakeFirstOrThrow();
      expect(JSON.parse(kv.value)).toBe("plain");
      expect(kv.updated_at).toBe(now);
      const ob = await database.db.selectFrom("outbox").selectAll().executeTakeFirstOrThrow();
      expect(ob.payload).toBe('{"b":1,"a":2}');
      expect(ob.attempts).toBe(0);
      expect(ob.lease_until).toBeNull();
      for (const t of [
        "docs",
        "files",
        "secrets",
        "topics",
        "app_signing_keys",
        "executions",
        "abandoned_executions",
      ] as const) {
        expect(await database.db.selectFrom(t).selectAll().execute()).toEqual([]);
      }
    } finally {
      await cleanup();
    }
  });
});
