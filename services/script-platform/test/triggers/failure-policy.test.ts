import { FakeClock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import type { TriggerKind } from "../../src/db/schema-triggers.js";
import {
  ignoreDeadLetter,
  listDeadLetters,
  replayDeadLetter,
  settleHandledDeadLetters,
} from "../../src/dispatch/dead-letters.js";
import { createOutboxWriter, type OutboxWriter } from "../../src/dispatch/enqueue.js";
import { createFailurePolicy, type FailurePolicy } from "../../src/dispatch/failure-policy.js";
import { insertTrigger } from "../../src/triggers/repository.js";
import type { RetryPolicy } from "../../src/triggers/settings.js";
import { backoffDelayMs } from "../../src/triggers/settings.js";

// The dispatcher's side is simulated here: it calls onRunFailed inside the settling transaction
// and deletes the row on `dead`/`drop` (dispatch.test.ts runs the real dispatcher end to end).
const APP = newId();
const T0 = Date.parse("2026-03-01T10:00:00.000Z");

describe("failure policy: retries with backoff, then a dead letter that fires dead_letter triggers", () => {
  let database: Database<PlatformDB>;
  let cleanup: () => Promise<void>;
  let outbox: OutboxWriter;
  let policy: FailurePolicy;
  const clock = new FakeClock(T0);

  async function trigger(kind: TriggerKind, retry: Partial<RetryPolicy> | null = null) {
    const id = newId();
    await insertTrigger(database.db, database.dialect, {
      id,
      app_id: APP,
      kind,
      script_id: `script-${kind}`,
      enabled: true,
      registered_by_principal: { admin: "a" },
      retry,
      created_at: clock.iso(),
      detail: {
        collection_pattern: kind === "kv" ? "*" : null,
        operations: null,
        topic_pattern: null,
        cron_schedule: null,
        cron_timezone: null,
        cron_next_due_at: null,
        cron_last_fired_at: null,
        email_inbound_secret_enc: null,
      },
    });
    return id;
  }
  async function outboxRow(triggerId: string | null, sourceKind = "kv") {
    const id = newId();
    await database.db
      .insertInto("outbox")
      .values({
        id,
        app_id: APP,
        source_kind: sourceKind,
        trigger_id: triggerId,
        script_id: "script-kv",
        payload: JSON.stringify({ event: { kv: { key: "k", value: 1 } } }),
        due_at: clock.iso(),
        depth: 2,
        principal: JSON.stringify({ admin: "a" }),
        reply_to: null,
        created_at: clock.iso(),
      })
      .execute();
    return id;
  }
  /** What the dispatcher does with a failed row. */
  async function fail(outboxId: string, triggerId: string | null, attempts: number) {
    return database.writeTx(async (trx) => {
      const verdict = await policy.onRunFailed(trx, {
        outboxId,
        appId: APP,
        triggerId,
        scriptId: "script-kv",
        attempts,
        error: { kind: "script_error", message: "boom" },
        executionId: `exec-${attempts}`,
      });
      if (verdict !== "retry") await trx.deleteFrom("outbox").where("id", "=", outboxId).execute();
      return verdict;
    });
  }
  const row = (id: string) =>
    database.db.selectFrom("outbox").selectAll().where("id", "=", id).executeTakeFirst();

  beforeAll(async () => {
    ({ database, cleanup } = await createTestDatabase<PlatformDB>(migrations));
    outbox = createOutboxWriter({ dialect: database.dialect, wake: () => {} });
    policy = createFailurePolicy({
      clock,
      dialect: database.dialect,
      defaults: { max_attempts: 2, backoff_ms: 50, max_backoff_ms: 50 },
      outbox,
    });
  });
  afterAll(async () => cleanup());
  beforeEach(async () => {
    for (const t of [
      "outbox",
      "dead_letter_handlers",
      "dead_letters",
      "trigger_details",
      "triggers",
    ] as const)
      await database.db.deleteFrom(t).execute();
  });

  it("backoff doubles from backoff_ms and is capped at max_backoff_ms", () => {
    const p = { max_attempts: 10, backoff_ms: 100, max_backoff_ms: 1000 };
    expect([1, 2, 3, 4, 5, 6].map((n) => backoffDelayMs(p, n))).toEqual([100, 200, 400, 800, 1000, 1000]);
  });

  it("reschedules with the trigger's backoff until max_attempts, then dead-letters with the payload", async () => {
    const t = await trigger("kv", { max_attempts: 3, backoff_ms: 1000, max_backoff_ms: 1500 });
    const id = await outboxRow(t);
    expect(await fail(id, t, 1)).toBe("retry");
    expect((await row(id))?.due_at).toBe(new Date(T0 + 1000).toISOString());
    expect((await row(id))?.attempts).toBe(1);
    expect(await fail(id, t, 2)).toBe("retry");
    expect((await row(id))?.due_at).toBe(new Date(T0 + 1500).toISOString());
    expect(
      await listDeadLetters(database.db, database.dialect, APP, {
        status: undefined,
        before: undefined,
        limit: 10,
      }),
    ).toEqual([]);
    expect(await fail(id, t, 3)).toBe("dead");
    const [dl, ...rest] = await listDeadLetters(database.db, database.dialect, APP, {
      status: "unresolved",
      before: undefined,
      limit: 10,
    });
    expect(rest).toHaveLength(0);
    expect(dl).toMatchObject({
      trigger_id: t,
      script_id: "script-kv",
      source_kind: "kv",
      attempts: 3,
      depth: 2,
      error: { kind: "script_error", message: "boom" },
      execution_id: "exec-3",
      resolution: null,
    });
    expect(JSON.parse(dl?.payload ?? "")).toEqual({ event: { kv: { key: "k", value: 1 } } });
  });

  it("rows without a trigger use the environment defaults", async () => {
    const id = await outboxRow(null, "http");
    expect(await fail(id, null, 1)).toBe("retry");
    expect((await row(id))?.due_at).toBe(new Date(T0 + 50).toISOString());
    expect(await fail(id, null, 2)).toBe("dead");
  });

  it("a dead letter enqueues every enabled dead_letter trigger; all handlers succeeding → handled_by_script", async () => {
    const t = await trigger("kv", { max_attempts: 1 });
    const h1 = await trigger("dead_letter");
    const h2 = await trigger("dead_letter");
    const id = await outboxRow(t);
    expect(await fail(id, t, 1)).toBe("dead");
    const handlers = await database.db
      .selectFrom("outbox")
      .selectAll()
      .where("source_kind", "=", "dead_letter")
      .execute();
    expect(handlers.map((h) => h.trigger_id).sort()).toEqual([h1, h2].sort());
    const ev = JSON.parse(handlers[0]?.payload ?? "").event.dead_letter;
    expect(ev).toMatchObject({
      trigger_id: t,
      source_kind: "kv",
      event: { kv: { key: "k", value: 1 } },
      attempts: 1,
    });
    expect(handlers[0]?.depth).toBe(3);

    // One handler finished; the dead letter stays unresolved while the other is pending.
    await database.db
      .deleteFrom("outbox")
      .where("id", "=", handlers[0]?.id ?? "")
      .execute();
    expect(await settleHandledDeadLetters(database, clock.iso())).toBe(0);
    await database.db
      .deleteFrom("outbox")
      .where("id", "=", handlers[1]?.id ?? "")
      .execute();
    expect(await settleHandledDeadLetters(database, clock.iso())).toBe(1);
    const [dl] = await listDeadLetters(database.db, database.dialect, APP, {
      status: "resolved",
      before: undefined,
      limit: 10,
    });
    expect(dl?.resolution).toBe("handled_by_script");
  });

  it("a failing handler resolves handler_failed and never produces another dead letter", async () => {
    const t = await trigger("kv", { max_attempts: 1 });
    const h = await trigger("dead_letter", { max_attempts: 2, backoff_ms: 10, max_backoff_ms: 10 });
    const id = await outboxRow(t);
    expect(await fail(id, t, 1)).toBe("dead");
    const handler = await database.db
      .selectFrom("outbox")
      .selectAll()
      .where("trigger_id", "=", h)
      .executeTakeFirstOrThrow();
    expect(await fail(handler.id, h, 1)).toBe("retry");
    expect(await fail(handler.id, h, 2)).toBe("drop");
    const all = await listDeadLetters(database.db, database.dialect, APP, {
      status: undefined,
      before: undefined,
      limit: 10,
    });
    expect(all).toHaveLength(1);
    expect(all[0]?.resolution).toBe("handler_failed");
    expect(await database.db.selectFrom("outbox").selectAll().execute()).toHaveLength(0);
    await settleHandledDeadLetters(database, clock.iso());
    const again = await listDeadLetters(database.db, database.dialect, APP, {
      status: undefined,
      before: undefined,
      limit: 10,
    });
    expect(again[0]?.resolution).toBe("handler_failed");
  });

  it("replay re-enqueues the original run with fresh attempts; ignore resolves; both refuse a resolved letter", async () => {
    const t = await trigger("kv", { max_attempts: 1 });
    await fail(await outboxRow(t), t, 1);
    await fail(await outboxRow(t), t, 1);
    const [a, b] = await listDeadLetters(database.db, database.dialect, APP, {
      status: "unresolved",
      before: undefined,
      limit: 10,
    });
    await clock.advance(5000);
    const replayed = await replayDeadLetter(database, outbox, APP, a?.id ?? "", clock.iso());
    expect(replayed.resolution).toBe("replayed");
    const rows = await database.db.selectFrom("outbox").selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      trigger_id: t,
      source_kind: "kv",
      attempts: 0,
      depth: 2,
      due_at: clock.iso(),
    });
    expect(JSON.parse(rows[0]?.payload ?? "")).toEqual({ event: { kv: { key: "k", value: 1 } } });
    expect((await ignoreDeadLetter(database, APP, b?.id ?? "", clock.iso())).resolution).toBe("ignored");
    await expect(ignoreDeadLetter(database, APP, a?.id ?? "", clock.iso())).rejects.toMatchObject({
      status: 409,
      code: "dead_letter_resolved",
    });
    await expect(replayDeadLetter(database, outbox, newId(), b?.id ?? "", clock.iso())).rejects.toMatchObject(
      {
        status: 404,
      },
    );
    expect(
      await listDeadLetters(database.db, database.dialect, APP, {
        status: "unresolved",
        before: undefined,
        limit: 10,
      }),
    ).toEqual([]);
  });
});
