import { FakeClock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import { createCronScheduler } from "../../src/dispatch/cron.js";
import { createOutboxWriter, type OutboxWriter } from "../../src/dispatch/enqueue.js";
import { createTrigger, getTrigger, patchTrigger, type TriggerDeps } from "../../src/triggers/service.js";

const APP = newId();
const SCRIPT = newId();
const T0 = Date.parse("2026-03-01T10:30:00.000Z");

describe("cron triggers: 6-field schedules in a time zone, one fire after downtime", () => {
  let database: Database<PlatformDB>;
  let cleanup: () => Promise<void>;
  let deps: TriggerDeps;
  let outbox: OutboxWriter;
  const clock = new FakeClock(T0);
  const { logger } = captureLogger();
  const cronRows = () =>
    database.db
      .selectFrom("outbox")
      .selectAll()
      .where("source_kind", "=", "cron")
      .orderBy("created_at")
      .execute();

  beforeAll(async () => {
    ({ database, cleanup } = await createTestDatabase<PlatformDB>(migrations));
    outbox = createOutboxWriter({ dialect: database.dialect, wake: () => {} });
    deps = {
      database,
      clock,
      secretBox: { seal: (s) => `sealed:${s}`, openString: (s) => s.slice(7) },
      scripts: { byId: async (id) => (id === SCRIPT ? { id, app_id: APP, kind: "endpoint" } : null) },
    };
  });
  afterAll(async () => cleanup());
  beforeEach(async () => {
    clock.set(T0);
    for (const t of ["outbox", "trigger_details", "triggers"] as const)
      await database.db.deleteFrom(t).execute();
  });

  const create = (body: Record<string, unknown>) =>
    createTrigger(deps, APP, "cron", { script_id: SCRIPT, ...body }, { admin: "a" });

  it("rejects a 5-field schedule, a bad expression and an unknown time zone with 422 naming the field", async () => {
    await expect(create({ schedule: "0 * * * *", timezone: "UTC" })).rejects.toMatchObject({
      status: 422,
      extra: { field: "schedule" },
    });
    await expect(create({ schedule: "99 * * * * *", timezone: "UTC" })).rejects.toMatchObject({
      status: 422,
      extra: { field: "schedule" },
    });
    await expect(create({ schedule: "0 0 * * * *", timezone: "Mars/Olympus" })).rejects.toMatchObject({
      status: 422,
      extra: { field: "timezone" },
    });
  });

  it("computes next_due_at in the trigger's IANA time zone", async () => {
    const t = await create({ schedule: "0 30 9 * * *", timezone: "Asia/Kolkata" });
    // 09:30 in India (UTC+05:30) is 04:00 UTC; it is 10:30 UTC now, so tomorrow.
    expect(t.detail.cron_next_due_at).toBe("2026-03-02T04:00:00.000Z");
  });

  it("fires when due, then once (not once per missed window) after hours of downtime", async () => {
    const t = await create({ schedule: "0 0 * * * *", timezone: "Europe/Berlin" });
    expect(t.detail.cron_next_due_at).toBe("2026-03-01T11:00:00.000Z");
    const sched = createCronScheduler({ database, clock, logger, outbox });
    sched.start();
    await clock.advance(29 * 60_000);
    await sched.tick();
    expect(await cronRows()).toHaveLength(0);
    await clock.advance(60_000);
    await sched.tick();
    const [first, ...more] = await cronRows();
    expect(more).toHaveLength(0);
    expect(JSON.parse(first?.payload ?? "").event.cron).toMatchObject({
      trigger_id: t.id,
      scheduled_at: "2026-03-01T11:00:00.000Z",
    });
    expect(first?.trigger_id).toBe(t.id);
    expect(JSON.parse(first?.principal ?? "")).toEqual({ admin: "a" });

    // The process stops for five hours (five missed windows) and starts again.
    sched.stop();
    clock.set(Date.parse("2026-03-01T16:20:00.000Z"));
    const restarted = createCronScheduler({ database, clock, logger, outbox });
    restarted.start();
    await clock.advance(1000);
    await restarted.tick();
    await clock.advance(5000);
    await restarted.tick();
    expect(await cronRows()).toHaveLength(2);
    const after = await getTrigger(deps, APP, t.id);
    expect(after.detail.cron_next_due_at).toBe("2026-03-01T17:00:00.000Z");
    expect(after.detail.cron_last_fired_at).toBe("2026-03-01T16:20:01.000Z");
    restarted.stop();
  });

  it("two schedulers on one database fire a due window once", async () => {
    await create({ schedule: "*/10 * * * * *", timezone: "UTC" });
    const a = createCronScheduler({ database, clock, logger, outbox });
    const b = createCronScheduler({ database, clock, logger, outbox });
    clock.set(T0 + 10_000);
    const fired = await Promise.all([a.tick(), b.tick()]);
    expect(fired[0] + fired[1]).toBe(1);
    expect(await cronRows()).toHaveLength(1);
  });

  it("a disabled trigger does not fire; re-enabling schedules from now", async () => {
    const t = await create({ schedule: "0 0 * * * *", timezone: "UTC", enabled: false });
    const sched = createCronScheduler({ database, clock, logger, outbox });
    clock.set(Date.parse("2026-03-01T14:10:00.000Z"));
    expect(await sched.tick()).toBe(0);
    const enabled = await patchTrigger(deps, APP, t.id, { enabled: true });
    expect(enabled.detail.cron_next_due_at).toBe("2026-03-01T15:00:00.000Z");
    expect(await sched.tick()).toBe(0);
  });
});
