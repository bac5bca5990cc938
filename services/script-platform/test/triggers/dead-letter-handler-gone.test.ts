import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deadLetter } from "../../src/dispatch/dead-letters.js";
import { type Harness, startHarness } from "../control/harness.js";
import { createScript, createTrigger, drainUntil, executionsOf } from "./e2e.js";

// biome-ignore lint/suspicious/noExplicitAny: API bodies are arbitrary JSON the assertions walk into
type Json = any;

describe("a dead letter whose handler script was deleted", () => {
  let h: Harness;
  let appId: string;

  beforeAll(async () => {
    h = await startHarness({ PLATFORM_WORKERS: "1" });
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "dl-gone" })).json().id;
  });
  afterAll(async () => h?.close());

  const letters = async (): Promise<Json[]> =>
    (await h.call("GET", `/api/v1/admin/apps/${appId}/dead-letters`)).json().items;

  it("resolves handler_failed, not handled_by_script, once the handler row finds no script", async () => {
    const failing = await createScript(
      h,
      appId,
      "failing",
      `export default async function () { throw new Error("x"); }`,
    );
    const handler = await createScript(
      h,
      appId,
      "dl-handler",
      `export default async function (ctx) { await kv.collection("handled").set(ctx.event.dead_letter.id, true); }`,
    );
    await createTrigger(h, appId, "dead_letter", { script_id: handler });

    // The dead letter is written (and its handler run enqueued) while the dispatcher is held, so
    // the handler script can be deleted before that run is claimed.
    const { runtime, dispatch } = h.built.engine;
    await runtime.dispatcher.stop();
    const { database, clock } = h.built.ctx;
    const dl = await database.writeTx((trx) =>
      deadLetter(
        trx,
        database.dialect,
        dispatch.outbox,
        {
          outboxId: "gone-source-row",
          appId,
          triggerId: null,
          scriptId: failing,
          sourceKind: "pubsub",
          payload: JSON.stringify({ event: { pubsub: { topic: "t", message: 1 } } }),
          principal: null,
          depth: 0,
          attempts: 5,
          error: { kind: "script_error", message: "x" },
          executionId: null,
        },
        clock.iso(),
      ),
    );
    const pending = await database.db
      .selectFrom("outbox")
      .select("id")
      .where("script_id", "=", handler)
      .where("source_kind", "=", "dead_letter")
      .execute();
    expect(pending).toHaveLength(1);
    expect((await h.call("DELETE", `/api/v1/admin/scripts/${handler}`)).statusCode).toBe(204);

    await runtime.dispatcher.start();
    await drainUntil(h, async () => (await letters()).some((l) => l.id === dl.id && l.status === "resolved"));
    const [resolved] = (await letters()).filter((l) => l.id === dl.id);
    expect(resolved).toMatchObject({ status: "resolved", resolution: "handler_failed" });
    // The handler run was attempted and recorded as failed for want of its script; it left no dead letter of its own.
    const runs = await executionsOf(h, handler);
    expect(runs).toHaveLength(1);
    expect(runs[0]?.status).toBe("failed");
    expect(await letters()).toHaveLength(1);
  });
});
