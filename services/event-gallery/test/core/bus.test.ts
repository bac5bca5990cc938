import { type Database, openDatabase } from "@app/kit/db";
import { createTestEnv, type TestEnv, testBackend } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createEventBus } from "../../src/realtime/bus.js";

describe("event bus", () => {
  let env: TestEnv;
  const dbs: Database<unknown>[] = [];
  beforeAll(async () => {
    env = await createTestEnv("gallery_bus");
  });
  afterAll(async () => {
    for (const d of dbs) await d.close();
    await env.cleanup();
  });
  const open = () => {
    const d = openDatabase<unknown>({ url: env.databaseUrl, sqliteFile: env.sqliteFile });
    dbs.push(d);
    return d;
  };

  it("delivers to local subscribers synchronously and survives a throwing subscriber", async () => {
    const logs = captureLogger();
    const bus = await createEventBus({ logger: logs.logger, database: open() });
    const seen: string[] = [];
    bus.subscribe(() => {
      throw new Error("boom");
    });
    const off = bus.subscribe((e, d, h) => seen.push(`${e}:${JSON.stringify(d)}:${h}`));
    bus.publish("like", { upload_id: "u" });
    bus.publish("pin-reset", { user_id: "x" }, { hostsOnly: true });
    expect(seen).toEqual(['like:{"upload_id":"u"}:false', 'pin-reset:{"user_id":"x"}:true']);
    off();
    bus.publish("like", { upload_id: "v" });
    expect(seen).toHaveLength(2);
    expect(logs.text()).toContain("event subscriber failed");
    await bus.close();
  });

  it.skipIf(testBackend() !== "postgres")(
    "reaches other processes' subscribers once through LISTEN/NOTIFY on PostgreSQL",
    async () => {
      const logger = captureLogger().logger;
      const a = await createEventBus({ logger, database: open() });
      const b = await createEventBus({ logger, database: open() });
      const onA: string[] = [];
      a.subscribe((e, d) => onA.push(`${e}:${d.upload_id}`));
      const got = new Promise<{ e: string; d: Record<string, unknown>; h: boolean }>((resolve) =>
        // Only this test's event: a stray NOTIFY on the shared channel must not satisfy the wait.
        b.subscribe((e, d, h) => e === "upload-removed" && resolve({ e, d, h })),
      );
      a.publish("upload-removed", { upload_id: "remote-1" }, { hostsOnly: false });
      expect(await got).toEqual({ e: "upload-removed", d: { upload_id: "remote-1" }, h: false });
      // The publisher's own process got it once (locally), not a second time via NOTIFY.
      const echo = new Promise<void>((resolve) => b.subscribe((e) => e === "marker" && resolve()));
      a.publish("marker", {});
      await echo;
      expect(onA).toEqual(["upload-removed:remote-1", "marker:undefined"]);
      await a.close();
      await b.close();
    },
  );
});
