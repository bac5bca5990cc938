import { FakeClock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { createTestDatabase } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import { createRetentionJob } from "../../src/dispatch/retention.js";
import { DEFAULT_TRIGGER_SETTINGS } from "../../src/triggers/settings.js";

const DAY = 86_400_000;
const NOW = Date.parse("2026-06-01T00:00:00.000Z");
const iso = (ms: number) => new Date(ms).toISOString();

describe("retention of resolved dead letters, abandoned executions and realtime messages", () => {
  let database: Database<PlatformDB>;
  let cleanup: () => Promise<void>;
  const clock = new FakeClock(NOW);

  beforeAll(async () => {
    ({ database, cleanup } = await createTestDatabase<PlatformDB>(migrations));
  });
  afterAll(async () => cleanup());

  const deadLetter = (id: string, createdAt: number, resolvedAt: number | null) =>
    database.db
      .insertInto("dead_letters")
      .values({
        id,
        app_id: "app",
        trigger_id: null,
        script_id: "s",
        source_kind: "kv",
        payload: "{}",
        principal: null,
        depth: 0,
        error: JSON.stringify({ kind: "x", message: "y" }),
        attempts: 1,
        execution_id: null,
        created_at: iso(createdAt),
        resolved_at: resolvedAt === null ? null : iso(resolvedAt),
        resolution: resolvedAt === null ? null : "ignored",
      })
      .execute();
  const abandoned = (id: string, createdAt: number) =>
    database.db
      .insertInto("abandoned_executions")
      .values({
        id,
        app_id: "app",
        script_id: "s",
        execution_id: newId(),
        reply_to: "inbox",
        status: "succeeded",
        result: null,
        created_at: iso(createdAt),
      })
      .execute();

  it("deletes only what is past its configured age, on start and every interval", async () => {
    await deadLetter("old-resolved", NOW - 40 * DAY, NOW - 11 * DAY);
    await deadLetter("recent-resolved", NOW - 40 * DAY, NOW - 9 * DAY);
    await deadLetter("old-unresolved", NOW - 400 * DAY, null);
    await abandoned("old-abandoned", NOW - 4 * DAY);
    await abandoned("new-abandoned", NOW - 2 * DAY);
    await database.db
      .insertInto("realtime_messages")
      .values([
        { app_id: "app", topic: "t", message: "1", created_at: iso(NOW - 2 * 3_600_000) },
        { app_id: "app", topic: "t", message: "2", created_at: iso(NOW - 60_000) },
      ])
      .execute();

    const job = createRetentionJob({
      database,
      clock,
      logger: captureLogger().logger,
      settings: { ...DEFAULT_TRIGGER_SETTINGS, deadLetterRetentionDays: 10, abandonedRetentionDays: 3 },
      everyMs: DAY,
    });
    expect(await job.run()).toEqual({ deadLetters: 1, abandonedExecutions: 1, realtimeMessages: 1 });
    const ids = (await database.db.selectFrom("dead_letters").select("id").orderBy("id").execute()).map(
      (r) => r.id,
    );
    expect(ids).toEqual(["old-unresolved", "recent-resolved"]);
    expect(
      (await database.db.selectFrom("abandoned_executions").select("id").execute()).map((r) => r.id),
    ).toEqual(["new-abandoned"]);

    // Scheduled passes two days later remove the letter that has now aged out.
    job.start();
    await clock.advance(2 * DAY);
    await job.run();
    job.stop();
    expect((await database.db.selectFrom("dead_letters").select("id").execute()).map((r) => r.id)).toEqual([
      "old-unresolved",
    ]);
  });
});
