import { sql } from "@app/kit/db";
import { testBackend } from "@app/kit/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_APP_ID } from "../../src/db/migrations/0001_control_plane.js";
import { type Harness, startHarness } from "../control/harness.js";
import { createScript, createTrigger, drainUntil, executionsOf } from "./e2e.js";

// On PostgreSQL the platform keeps generic plans of its named statements (plan_cache_mode auto):
// the publish lookup is planned a few times per connection, not on every publish. A kept plan
// holds no rows: a trigger added after many publishes is seen by the next one.
describe(`publish lookups with kept plans on ${testBackend()}`, () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ PLATFORM_WORKERS: "1" });
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  it.skipIf(testBackend() !== "postgres")(
    "opens its PostgreSQL sessions with plan_cache_mode auto",
    async () => {
      const r = await sql<{ m: string }>`SELECT current_setting('plan_cache_mode') AS m`.execute(
        h.built.ctx.database.db,
      );
      expect(r.rows).toEqual([{ m: "auto" }]);
    },
  );

  it("a trigger added after many publishes of its topic fires on the next one", async () => {
    const sink = `export default async function (ctx) { return ctx.event.pubsub.message; }`;
    const first = await createScript(h, DEFAULT_APP_ID, "first", sink);
    const second = await createScript(h, DEFAULT_APP_ID, "second", sink);
    const writer = await createScript(
      h,
      DEFAULT_APP_ID,
      "writer",
      `export default async function (ctx) { return pubsub.publishDurable("news", ctx.request.query.n); }`,
    );
    await createTrigger(h, DEFAULT_APP_ID, "pubsub", { script_id: first, topic: "news" });
    // One at a time, so the pool hands the same idle connection back and its plan is kept.
    for (let n = 0; n < 8; n++) {
      const res = await h.call("POST", `/api/v1/execute/${writer}?n=${n}`, {});
      expect(res.json()).toEqual({ enqueued: 1 });
    }
    await drainUntil(h, async () => (await executionsOf(h, first)).length === 8);

    await createTrigger(h, DEFAULT_APP_ID, "pubsub", { script_id: second, topic: "news.*" });
    await createTrigger(h, DEFAULT_APP_ID, "pubsub", { script_id: second, topic: "news" });
    expect((await h.call("POST", `/api/v1/execute/${writer}?n=8`, {})).json()).toEqual({ enqueued: 2 });
    await drainUntil(h, async () => (await executionsOf(h, second)).length === 1);
    expect((await executionsOf(h, first)).map((e) => e.status)).toEqual(Array(9).fill("succeeded"));
    expect((await executionsOf(h, second)).map((e) => e.status)).toEqual(["succeeded"]);
  });
});
