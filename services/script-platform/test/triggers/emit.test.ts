import { FakeClock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import type { TriggerKind } from "../../src/db/schema-triggers.js";
import { createChangeEvents, type EventSink } from "../../src/dispatch/change-events.js";
import { createOutboxWriter } from "../../src/dispatch/enqueue.js";
import type { TriggerDetail } from "../../src/triggers/model.js";
import { insertTrigger } from "../../src/triggers/repository.js";

const APP = newId();
const OTHER_APP = newId();
const emptyDetail: TriggerDetail = {
  collection_pattern: null,
  operations: null,
  topic_pattern: null,
  cron_schedule: null,
  cron_timezone: null,
  cron_next_due_at: null,
  cron_last_fired_at: null,
  email_inbound_secret_enc: null,
};

describe("change and pubsub events write outbox rows for matching triggers", () => {
  let database: Database<PlatformDB>;
  let events: EventSink;
  let cleanup: () => Promise<void>;
  const clock = new FakeClock(Date.parse("2026-03-01T10:00:00.000Z"));
  const cap = captureLogger();

  async function trigger(
    kind: TriggerKind,
    detail: Partial<TriggerDetail>,
    opts: { app?: string; enabled?: boolean } = {},
  ) {
    const id = newId();
    await insertTrigger(database.db, database.dialect, {
      id,
      app_id: opts.app ?? APP,
      kind,
      script_id: `script-${id}`,
      enabled: opts.enabled ?? true,
      registered_by_principal: { admin_id: "a1", scopes: ["app:admin"] },
      retry: null,
      created_at: clock.iso(),
      detail: { ...emptyDetail, ...detail },
    });
    return id;
  }
  const outbox = () => database.db.selectFrom("outbox").selectAll().orderBy("id").execute();

  beforeAll(async () => {
    ({ database, cleanup } = await createTestDatabase<PlatformDB>(migrations));
    events = createChangeEvents({
      clock,
      logger: cap.logger,
      database,
      maxDepth: 3,
      outbox: createOutboxWriter({ dialect: database.dialect, wake: () => {} }),
    });
  });
  afterAll(async () => cleanup());
  beforeEach(async () => {
    await database.db.deleteFrom("outbox").execute();
    await database.db.deleteFrom("trigger_details").execute();
    await database.db.deleteFrom("triggers").execute();
  });

  it("matches collection patterns (*, prefix*, exact) and operation filters, one row per trigger", async () => {
    const all = await trigger("docs", { collection_pattern: "*", operations: [] });
    const prefix = await trigger("docs", { collection_pattern: "orders:*", operations: ["update"] });
    const exact = await trigger("docs", { collection_pattern: "orders:eu", operations: ["create"] });
    await trigger("docs", { collection_pattern: "orders:eu" }, { enabled: false });
    await trigger("docs", { collection_pattern: "*" }, { app: OTHER_APP });
    await trigger("kv", { collection_pattern: "*" });

    const n = await database.writeTx((trx) =>
      events.change(trx, {
        appId: APP,
        kind: "docs",
        collection: "orders:eu",
        operation: "update",
        payload: {
          collection: "orders:eu",
          id: "d1",
          operation: "update",
          data: { a: 2 },
          prev_data: { a: 1 },
        },
        depth: 0,
      }),
    );
    expect(n).toBe(2);
    const rows = await outbox();
    expect(rows.map((r) => r.trigger_id).sort()).toEqual([all, prefix].sort());
    expect(rows.map((r) => r.trigger_id)).not.toContain(exact);
    const row = rows[0];
    expect(row?.source_kind).toBe("docs");
    expect(row?.depth).toBe(1);
    expect(row?.due_at).toBe(clock.iso());
    expect(JSON.parse(row?.payload ?? "null")).toEqual({
      event: {
        docs: { collection: "orders:eu", id: "d1", operation: "update", data: { a: 2 }, prev_data: { a: 1 } },
      },
    });
    expect(JSON.parse(row?.principal ?? "null")).toEqual({ admin_id: "a1", scopes: ["app:admin"] });
  });

  it("no match is a silent success and writes nothing", async () => {
    await trigger("kv", { collection_pattern: "users", operations: ["delete"] });
    const n = await database.writeTx((trx) =>
      events.change(trx, {
        appId: APP,
        kind: "kv",
        collection: "users",
        operation: "set",
        payload: { key: "k" },
        depth: 0,
      }),
    );
    expect(n).toBe(0);
    expect(await outbox()).toHaveLength(0);
  });

  it("rows roll back with the write's transaction", async () => {
    await trigger("kv", { collection_pattern: "*" });
    await expect(
      database.writeTx(async (trx) => {
        await events.change(trx, {
          appId: APP,
          kind: "kv",
          collection: "c",
          operation: "set",
          payload: {},
          depth: 0,
        });
        throw new Error("write failed");
      }),
    ).rejects.toThrow("write failed");
    expect(await outbox()).toHaveLength(0);
  });

  it("a write at the maximum depth emits nothing and logs once (only when it suppressed a trigger)", async () => {
    await trigger("kv", { collection_pattern: "*" });
    await trigger("kv", { collection_pattern: "c" });
    const before = cap.lines.length;
    const ev = { appId: APP, kind: "kv" as const, collection: "c", operation: "set" as const, payload: {} };
    expect(await database.writeTx((trx) => events.change(trx, { ...ev, depth: 2 }))).toBe(2);
    expect(await database.writeTx((trx) => events.change(trx, { ...ev, depth: 3 }))).toBe(0);
    // A write at the limit that matches no trigger suppresses nothing and says nothing.
    expect(await database.writeTx((trx) => events.change(trx, { ...ev, appId: OTHER_APP, depth: 3 }))).toBe(
      0,
    );
    const warnings = cap.lines.slice(before).filter((l) => l.includes("trigger chain depth"));
    expect(warnings).toHaveLength(1);
    expect((await outbox()).map((r) => r.depth)).toEqual([3, 3]);
  });

  it("pubsub matches exact, prefix.* and * topic patterns", async () => {
    const exact = await trigger("pubsub", { topic_pattern: "orders.created" });
    const prefix = await trigger("pubsub", { topic_pattern: "orders.*" });
    const any = await trigger("pubsub", { topic_pattern: "*" });
    await trigger("pubsub", { topic_pattern: "orders" });
    await trigger("pubsub", { topic_pattern: "billing.*" });
    const n = await database.writeTx((trx) =>
      events.pubsub(trx, { appId: APP, topic: "orders.created", message: { id: 7 }, depth: 0 }),
    );
    expect(n).toBe(3);
    const rows = await outbox();
    expect(rows.map((r) => r.trigger_id).sort()).toEqual([exact, prefix, any].sort());
    const payload = JSON.parse(rows[0]?.payload ?? "null") as {
      event: { pubsub: { topic: string; message: unknown } };
    };
    expect(payload.event.pubsub.topic).toBe("orders.created");
    expect(payload.event.pubsub.message).toEqual({ id: 7 });
  });
});
