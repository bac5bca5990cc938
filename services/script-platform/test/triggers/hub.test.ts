import { FakeClock } from "@app/kit/clock";
import { createTestDatabase } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import { afterAll, describe, expect, it } from "vitest";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";
import { createRealtimeHub } from "../../src/realtime/hub.js";

describe("realtime hub bounds", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups) await c();
  });

  it("refuses subscribers beyond its cap with 503 + Retry-After and frees a slot on unsubscribe", async () => {
    const { database, cleanup } = await createTestDatabase<PlatformDB>(migrations);
    cleanups.push(cleanup);
    const hub = createRealtimeHub({
      database,
      clock: new FakeClock(),
      logger: captureLogger().logger,
      maxSubscribers: 2,
    });
    await hub.start();
    cleanups.unshift(() => hub.stop());
    const first = await hub.subscribe("app", "t", () => {});
    await hub.subscribe("app", "t", () => {});
    await expect(hub.subscribe("app", "u", () => {})).rejects.toMatchObject({
      status: 503,
      code: "subscriber_limit",
      headers: { "retry-after": "5" },
    });
    first();
    first();
    expect(hub.size).toBe(1);
    await hub.subscribe("app", "u", () => {});
    expect(hub.size).toBe(2);
  });
});
