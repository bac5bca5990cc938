import { testBackend } from "@app/kit/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_APP_ID } from "../../src/db/migrations/0001_control_plane.js";
import { ADMIN, type Harness, startHarness } from "../control/harness.js";
import { createScript, createTrigger, drainUntil, kvValue } from "../triggers/e2e.js";

// Two app instances built in one process: each must enqueue, time and wake with its own clock,
// dialect and dispatcher. A is on the run's backend (PostgreSQL under TEST_BACKEND=postgres), B
// always on SQLite, so a PostgreSQL run mixes the two backends in one process.
const T_A = "2031-01-02T03:04:05.000Z";
const T_B = "2027-06-07T08:09:10.000Z";

describe("two apps in one process share no clock, dialect or dispatcher", () => {
  let a: Harness;
  let b: Harness;

  beforeAll(async () => {
    a = await startHarness({ PLATFORM_WORKERS: "1" });
    b = await startHarness({ PLATFORM_WORKERS: "1", DATABASE_URL: "" });
    for (const [h, t] of [
      [a, T_A],
      [b, T_B],
    ] as const) {
      h.clock.set(Date.parse(t));
      // The harness's session was issued at the old time: log in again at the new one.
      h.token = (await h.call("POST", "/api/v1/admin/login", ADMIN, null)).json().token;
    }
  }, 60_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it("each app runs on its own backend", () => {
    expect(a.built.ctx.database.backend).toBe(testBackend());
    expect(b.built.ctx.database.backend).toBe("sqlite");
    expect(a.built.engine).not.toBe(b.built.engine);
  });

  it("a publish fires that app's trigger, stamped and run at that app's time", async () => {
    const setup = async (h: Harness, label: string) => {
      const onMessage = await createScript(
        h,
        DEFAULT_APP_ID,
        "on-message",
        `export default async function (ctx) { await kv.collection("seen").set("last", ctx.event.pubsub); }`,
      );
      await createTrigger(h, DEFAULT_APP_ID, "pubsub", { script_id: onMessage, topic: "news" });
      const writer = await createScript(
        h,
        DEFAULT_APP_ID,
        "writer",
        `export default async function () { return pubsub.publishDurable("news", ${JSON.stringify(label)}); }`,
      );
      return { onMessage, writer };
    };
    const sa = await setup(a, "from A");
    const sb = await setup(b, "from B");

    // Concurrent: any state the two apps shared would stamp one app's event with the other's time.
    const [ra, rb] = await Promise.all([
      a.call("POST", `/api/v1/execute/${sa.writer}`, {}),
      b.call("POST", `/api/v1/execute/${sb.writer}`, {}),
    ]);
    expect(ra.json()).toEqual({ enqueued: 1 });
    expect(rb.json()).toEqual({ enqueued: 1 });

    for (const [h, t, label, onMessage] of [
      [a, T_A, "from A", sa.onMessage],
      [b, T_B, "from B", sb.onMessage],
    ] as const) {
      // This app's dispatcher runs it; the event was stamped by this app's clock when enqueued.
      const runOf = () =>
        h.built.ctx.database.db
          .selectFrom("executions")
          .select(["invocation_type", "status"])
          .where("script_id", "=", onMessage)
          .executeTakeFirst();
      await drainUntil(h, async () => (await runOf()) !== undefined);
      expect(await kvValue(h, DEFAULT_APP_ID, "seen", "last")).toEqual({
        topic: "news",
        message: label,
        published_at: t,
      });
      const run = await runOf();
      expect(run).toEqual({ invocation_type: "pubsub", status: "succeeded" });
    }
  }, 60_000);

  it("each app's dispatch writes rows with its own clock and its own dialect", async () => {
    for (const [h, t] of [
      [a, T_A],
      [b, T_B],
    ] as const) {
      const { database } = h.built.ctx;
      const trigger = await database.db
        .selectFrom("triggers")
        .select(["id", "script_id"])
        .where("kind", "=", "pubsub")
        .executeTakeFirstOrThrow();
      // Hold the dispatcher off: the row must stay to be read.
      await h.built.engine.runtime.dispatcher.stop();
      const id = await database.writeTx((trx) =>
        h.built.engine.dispatch.outbox.enqueue(trx, {
          appId: DEFAULT_APP_ID,
          sourceKind: "kv",
          triggerId: trigger.id,
          scriptId: trigger.script_id,
          event: { kv: { operation: "set", collection: "in", key: "direct", value: 1 } },
          depth: 1,
          principal: { admin: "x" },
          dueAt: h.clock.iso(),
          now: h.clock.iso(),
        }),
      );
      const row = await database.db
        .selectFrom("outbox")
        .select(["created_at", "payload", "principal"])
        .where("id", "=", id)
        .executeTakeFirstOrThrow();
      expect(database.dialect.fromTimestamp(row.created_at)).toBe(t);
      // Written through this database's dialect (JSON text on both backends): it reads back the same.
      expect(JSON.parse(row.payload)).toEqual({
        event: { kv: { operation: "set", collection: "in", key: "direct", value: 1 } },
      });
      expect(JSON.parse(row.principal ?? "")).toEqual({ admin: "x" });
      await database.db.deleteFrom("outbox").where("id", "=", id).execute();
      await h.built.engine.runtime.dispatcher.start();
    }
  });
});
