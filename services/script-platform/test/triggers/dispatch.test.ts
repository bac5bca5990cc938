import { createHmac } from "node:crypto";
import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";
import { createScript, createTrigger, drainUntil, executionsOf, kvAll, kvValue } from "./e2e.js";

// biome-ignore lint/suspicious/noExplicitAny: events are arbitrary JSON the assertions walk into
type Json = any;

// Records what a triggered script saw, keyed by its execution id.
const RECORD = `export default async function (ctx) {
  await kv.collection("seen").set(ctx.execution_id, { type: ctx.invocation_type, event: ctx.event });
  return null;
}`;

describe("triggers end to end through the dispatcher (real scripts)", () => {
  let h: Harness;
  let appId: string;
  let record: string;

  const run = async (scriptId: string, as?: string | null) => {
    const res = await h.call("POST", `/api/v1/execute/${scriptId}`, {}, as);
    expect(res.statusCode, res.body).toBe(200);
    return res;
  };
  const seen = () => kvAll(h, appId, "seen") as Promise<{ type: string; event: Record<string, Json> }[]>;

  beforeAll(async () => {
    h = await startHarness({
      PLATFORM_MAX_TRIGGER_DEPTH: "3",
      PLATFORM_TRIGGER_BACKOFF_MS: "10",
      PLATFORM_TRIGGER_MAX_BACKOFF_MS: "10",
    });
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "e2e" })).json().id;
    record = await createScript(h, appId, "record", RECORD);
  });
  afterAll(async () => h.close());

  it("kv and docs writes fire matching triggers; docs events carry prev_data", async () => {
    await createTrigger(h, appId, "kv", { script_id: record, collection: "carts", operations: ["set"] });
    await createTrigger(h, appId, "docs", {
      script_id: record,
      collection: "orders:*",
      operations: ["update"],
    });
    const writer = await createScript(
      h,
      appId,
      "writer",
      `export default async function (ctx) {
        await kv.collection("carts").set("c1", { items: 2 });
        await kv.collection("carts").delete("c1");
        await kv.collection("other").set("x", 1);
        const orders = docs.collection("orders:eu");
        const d = await orders.create({ status: "new" }, { id: "o1" });
        await orders.patch("o1", { status: "paid" });
        return d.id;
      }`,
    );
    await run(writer);
    await drainUntil(h, async () => (await seen()).length === 2);
    const events = await seen();
    const kvEvent = events.find((e) => e.type === "kv");
    expect(kvEvent?.event.kv).toMatchObject({ collection: "carts", key: "c1", operation: "set" });
    const docsEvent = events.find((e) => e.type === "docs");
    expect(docsEvent?.event.docs).toMatchObject({
      collection: "orders:eu",
      operation: "update",
      prev_data: { status: "new" },
    });
  });

  it("a trigger chain stops at PLATFORM_MAX_TRIGGER_DEPTH and says so once in the log", async () => {
    const loop = await createScript(
      h,
      appId,
      "loop",
      `export default async function (ctx) {
        const n = (await kv.collection("loop-count").get("n")) ?? 0;
        await kv.collection("loop-count").set("n", n + 1);
        await kv.collection("loop").set("k", n + 1);
        return null;
      }`,
    );
    await createTrigger(h, appId, "kv", { script_id: loop, collection: "loop" });
    const kick = await createScript(
      h,
      appId,
      "kick",
      `export default async function () { await kv.collection("loop").set("k", 0); return null; }`,
    );
    const before = h.logs.text().split("trigger chain depth reached").length;
    await run(kick);
    await drainUntil(
      h,
      async () => (await h.built.ctx.database.db.selectFrom("outbox").selectAll().execute()).length === 0,
    );
    // Depth 0 (HTTP) writes → runs at depths 1, 2, 3; the run at depth 3 writes without emitting.
    expect(await kvValue(h, appId, "loop-count", "n")).toBe(3);
    expect((await executionsOf(h, loop)).length).toBe(3);
    expect(h.logs.text().split("trigger chain depth reached").length - before).toBe(1);
  });

  it("runs the script as the principal that registered the trigger", async () => {
    const key = await h.call("POST", "/api/v1/admin/api-keys", {
      name: "reader",
      scopes: ["app:admin", "app:read", "script:read"],
    });
    expect(key.statusCode, key.body).toBe(201);
    const writes = await createScript(
      h,
      appId,
      "writes-as-key",
      `export default async function (ctx) { await kv.collection("as-key").set("k", 1); return null; }`,
    );
    await createTrigger(
      h,
      appId,
      "pubsub",
      { script_id: writes, topic: "as-key", retry: { max_attempts: 1 } },
      key.json().secret,
    );
    const pub = await createScript(
      h,
      appId,
      "pub-as-key",
      `export default async function () { await pubsub.publishDurable("as-key", {}); return null; }`,
    );
    await run(pub);
    await drainUntil(h, async () => (await executionsOf(h, writes)).length === 1);
    const [exec] = await executionsOf(h, writes);
    expect(exec?.status).toBe("failed");
    expect(await kvValue(h, appId, "as-key", "k")).toBeUndefined();
  });

  it("email webhook → ctx.event.email", async () => {
    const trig = await createTrigger(h, appId, "email", { script_id: record, inbound_secret: "hook-secret" });
    const body = JSON.stringify({ from: "x@example.com", to: ["y@example.com"], subject: "hi", text: "t" });
    const res = await h.built.app.inject({
      method: "POST",
      url: `/api/v1/email-inbound/${appId}/${trig}`,
      headers: {
        "content-type": "application/json",
        "x-signature": `sha256=${createHmac("sha256", "hook-secret").update(body).digest("hex")}`,
      },
      payload: body,
    });
    expect(res.statusCode).toBe(202);
    await drainUntil(h, async () => (await seen()).some((e) => e.type === "email"));
    const email = (await seen()).find((e) => e.type === "email")?.event.email;
    expect(email).toEqual({
      from: "x@example.com",
      to: ["y@example.com"],
      cc: [],
      subject: "hi",
      text: "t",
      html: "",
      received_at: expect.any(String),
      message_id: null,
    });
  });

  it("cron fires the script with ctx.event.cron", async () => {
    const trig = await createTrigger(h, appId, "cron", {
      script_id: record,
      schedule: "*/30 * * * * *",
      timezone: "UTC",
    });
    await drainUntil(h, async () => (await seen()).some((e) => e.type === "cron"));
    expect((await seen()).find((e) => e.type === "cron")?.event.cron).toMatchObject({ trigger_id: trig });
  });

  it("a row whose claim lease expired (crashed instance) is run; an unexpired lease is left alone", async () => {
    const { database, clock } = h.built.ctx;
    const insert = (id: string, leaseUntil: string) =>
      database.db
        .insertInto("outbox")
        .values({
          id,
          app_id: appId,
          source_kind: "pubsub",
          trigger_id: null,
          script_id: record,
          payload: JSON.stringify({ event: { pubsub: { topic: "crash", message: { id } } } }),
          due_at: clock.iso(),
          principal: null,
          reply_to: null,
          claimed_by: "crashed-instance",
          lease_until: leaseUntil,
          created_at: clock.iso(),
        })
        .execute();
    const expired = newId();
    const held = newId();
    await insert(expired, new Date(clock.now() - 1).toISOString());
    await insert(held, new Date(clock.now() + 120_000).toISOString());
    const crashRuns = async () => (await seen()).filter((e) => e.event.pubsub?.topic === "crash");
    await drainUntil(h, async () => (await crashRuns()).length === 1);
    expect((await crashRuns())[0]?.event.pubsub.message.id).toBe(expired);
    await drainUntil(h, async () => (await crashRuns()).length === 2, 200);
    expect((await crashRuns())[1]?.event.pubsub.message.id).toBe(held);
  });
});

describe("retries and dead letters end to end", () => {
  let h: Harness;
  let appId: string;
  const deadLetters = async (status?: string) =>
    (
      await h.call("GET", `/api/v1/admin/apps/${appId}/dead-letters${status ? `?status=${status}` : ""}`)
    ).json().items;

  beforeAll(async () => {
    h = await startHarness();
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "dl" })).json().id;
  });
  afterAll(async () => h.close());

  it("retries with backoff, dead-letters, fires dead_letter triggers → handled_by_script; replay re-runs", async () => {
    const flaky = await createScript(
      h,
      appId,
      "flaky",
      `export default async function (ctx) {
        if (!(await kv.collection("switch").get("on"))) throw new Error("not yet");
        await kv.collection("done").set("flaky", ctx.event.pubsub.message);
        return null;
      }`,
    );
    const handler = await createScript(
      h,
      appId,
      "dl-handler",
      `export default async function (ctx) {
        await kv.collection("handled").set(ctx.event.dead_letter.id, ctx.event.dead_letter);
        return null;
      }`,
    );
    await createTrigger(h, appId, "pubsub", {
      script_id: flaky,
      topic: "jobs",
      retry: { max_attempts: 3, backoff_ms: 1000, max_backoff_ms: 2000 },
    });
    await createTrigger(h, appId, "dead_letter", { script_id: handler });
    const pub = await createScript(
      h,
      appId,
      "pub",
      `export default async function () { await pubsub.publishDurable("jobs", { n: 1 }); return null; }`,
    );
    await h.call("POST", `/api/v1/execute/${pub}`, {});

    await drainUntil(h, async () => (await deadLetters("resolved")).length === 1);
    const runs = await executionsOf(h, flaky);
    expect(runs.map((r) => r.status)).toEqual(["failed", "failed", "failed"]);
    const [dl] = await deadLetters("resolved");
    expect(dl).toMatchObject({
      script_id: flaky,
      source_kind: "pubsub",
      attempts: 3,
      resolution: "handled_by_script",
      status: "resolved",
      event: { pubsub: { topic: "jobs", message: { n: 1 } } },
      error: { message: expect.stringContaining("not yet") },
    });
    const handled = (await kvValue(h, appId, "handled", dl.id)) as Record<string, unknown>;
    expect(handled).toMatchObject({ id: dl.id, source_kind: "pubsub", attempts: 3 });
    expect(await deadLetters("unresolved")).toEqual([]);

    // A resolved letter cannot be replayed; an unresolved one can, and runs again.
    expect(
      (await h.call("POST", `/api/v1/admin/apps/${appId}/dead-letters/${dl.id}/replay`)).statusCode,
    ).toBe(409);
  });

  it("a failing dead_letter handler resolves handler_failed and never produces another dead letter; replay works", async () => {
    const other = (await h.call("POST", "/api/v1/admin/apps", { slug: "dl-two" })).json().id;
    const boom = await createScript(
      h,
      other,
      "boom",
      `export default async function (ctx) {
      if (!(await kv.collection("switch").get("on"))) throw new Error("boom");
      await kv.collection("done").set("boom", ctx.event.pubsub.message);
      return null;
    }`,
    );
    const badHandler = await createScript(
      h,
      other,
      "bad-handler",
      `export default async function () { throw new Error("handler broke"); }`,
    );
    await createTrigger(h, other, "pubsub", { script_id: boom, topic: "t", retry: { max_attempts: 1 } });
    await createTrigger(h, other, "dead_letter", {
      script_id: badHandler,
      retry: { max_attempts: 2, backoff_ms: 10, max_backoff_ms: 10 },
    });
    const pub = await createScript(
      h,
      other,
      "pub",
      `export default async function () { await pubsub.publishDurable("t", { v: 7 }); return null; }`,
    );
    await h.call("POST", `/api/v1/execute/${pub}`, {});
    const list = async (status: string) =>
      (await h.call("GET", `/api/v1/admin/apps/${other}/dead-letters?status=${status}`)).json().items;
    await drainUntil(h, async () => (await list("resolved")).length === 1);
    const all = (await h.call("GET", `/api/v1/admin/apps/${other}/dead-letters`)).json().items;
    expect(all).toHaveLength(1);
    expect(all[0].resolution).toBe("handler_failed");
    expect((await executionsOf(h, badHandler)).map((e) => e.status)).toEqual(["failed", "failed"]);

    // Fix the cause, replay: the original run goes through.
    await h.built.ctx.database.db
      .insertInto("kv_entries")
      .values({ app_id: other, collection: "switch", key: "on", value: "true", updated_at: h.clock.iso() })
      .execute();
    const replay = await h.call("POST", `/api/v1/admin/apps/${other}/dead-letters/${all[0].id}/replay`);
    expect(replay.statusCode).toBe(200);
    expect(replay.json().resolution).toBe("replayed");
    await drainUntil(h, async () => (await kvValue(h, other, "done", "boom")) !== undefined);
    expect(await kvValue(h, other, "done", "boom")).toEqual({ v: 7 });
    expect((await h.call("GET", `/api/v1/admin/apps/${other}/dead-letters`)).json().items).toHaveLength(1);
  });

  it("ignore resolves an unresolved dead letter", async () => {
    const third = (await h.call("POST", "/api/v1/admin/apps", { slug: "dl-three" })).json().id;
    const fail = await createScript(
      h,
      third,
      "fail",
      `export default async function () { throw new Error("x"); }`,
    );
    await createTrigger(h, third, "pubsub", { script_id: fail, topic: "t", retry: { max_attempts: 1 } });
    const pub = await createScript(
      h,
      third,
      "pub",
      `export default async function () { await pubsub.publishDurable("t", 1); return null; }`,
    );
    await h.call("POST", `/api/v1/execute/${pub}`, {});
    const list = async (status: string) =>
      (await h.call("GET", `/api/v1/admin/apps/${third}/dead-letters?status=${status}`)).json().items;
    await drainUntil(h, async () => (await list("unresolved")).length === 1);
    const [dl] = await list("unresolved");
    const res = await h.call("POST", `/api/v1/admin/apps/${third}/dead-letters/${dl.id}/ignore`);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ resolution: "ignored", status: "resolved" });
    expect(await list("unresolved")).toEqual([]);
    expect(
      (await h.call("POST", `/api/v1/admin/apps/${third}/dead-letters/${dl.id}/ignore`)).statusCode,
    ).toBe(409);
    expect(
      (await h.call("POST", `/api/v1/admin/apps/${third}/dead-letters/${newId()}/ignore`)).statusCode,
    ).toBe(404);
  });
});
