import { createHmac } from "node:crypto";
import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";
import { drainUntil, kvAll } from "./e2e.js";
import { seedApp, seedScript } from "./seed.js";

// The email triggers' target records the event it was run with.
const RECORD = `export default async function (ctx) {
  await kv.collection("seen").set(ctx.execution_id, ctx.event);
  return null;
}`;

describe("trigger, topic, dead-letter and email-inbound HTTP API", () => {
  let h: Harness;
  let appId: string;
  let otherApp: string;
  let endpoint: string;
  let moduleScript: string;
  let foreign: string;
  const base = () => `/api/v1/admin/apps/${appId}`;

  beforeAll(async () => {
    h = await startHarness();
    appId = await seedApp(h.built, "shop");
    otherApp = await seedApp(h.built, "other");
    endpoint = await seedScript(h.built, appId, "on-event", RECORD);
    moduleScript = await seedScript(h.built, appId, "lib", "export const x = 1;", "module");
    foreign = await seedScript(h.built, otherApp, "foreign");
  });
  afterAll(async () => h.close());

  it("creates a trigger of every kind (201), enabled unless told, with the admin as registered principal", async () => {
    const bodies: Record<string, Record<string, unknown>> = {
      kv: { collection: "carts", operations: ["set"] },
      docs: { collection: "orders:*", operations: [] },
      files: { collection: "*" },
      pubsub: { topic: "orders.*" },
      cron: { schedule: "0 */5 * * * *", timezone: "Europe/Paris" },
      email: { inbound_secret: "whsec-123" },
      dead_letter: {},
    };
    for (const [kind, detail] of Object.entries(bodies)) {
      const res = await h.call("POST", `${base()}/triggers/${kind}`, { script_id: endpoint, ...detail });
      expect(res.statusCode, `${kind}: ${res.body}`).toBe(201);
      const t = res.json();
      expect(t).toMatchObject({ kind, app_id: appId, script_id: endpoint, enabled: true });
      expect(t.registered_by_principal).toMatchObject({ kind: "admin", username: "root" });
      expect(res.body).not.toContain("whsec-123");
    }
    const list = await h.call("GET", `${base()}/triggers`);
    expect(list.statusCode).toBe(200);
    expect(
      list
        .json()
        .items.map((t: { kind: string }) => t.kind)
        .sort(),
    ).toEqual(Object.keys(bodies).sort());
    expect(list.json().next_cursor).toBeNull();
    const cron = list.json().items.find((t: { kind: string }) => t.kind === "cron");
    expect(cron).toMatchObject({
      schedule: "0 */5 * * * *",
      timezone: "Europe/Paris",
      next_due_at: "2026-11-21T12:05:00.000Z",
    });
    const email = list.json().items.find((t: { kind: string }) => t.kind === "email");
    expect(email.has_inbound_secret).toBe(true);
    const kv = list.json().items.find((t: { kind: string }) => t.kind === "kv");
    expect(kv).toMatchObject({ collection: "carts", operations: ["set"] });
  });

  it("pages the list with next_cursor", async () => {
    const first = await h.call("GET", `${base()}/triggers?limit=4`);
    expect(first.json().items).toHaveLength(4);
    expect(first.json().next_cursor).toEqual(expect.any(String));
    const second = await h.call("GET", `${base()}/triggers?limit=4&cursor=${first.json().next_cursor}`);
    expect(second.json().items).toHaveLength(3);
    expect(second.json().next_cursor).toBeNull();
  });

  it("rejects a module target, another app's script and an unknown script with 422", async () => {
    for (const script_id of [moduleScript, foreign, newId()]) {
      const res = await h.call("POST", `${base()}/triggers/kv`, { script_id, collection: "*" });
      expect(res.statusCode).toBe(422);
      expect(res.json().error).toMatchObject({ code: "invalid_trigger_target", field: "script_id" });
    }
  });

  it("validates patterns, operations and unknown fields with 422 naming the field", async () => {
    const cases: [string, Record<string, unknown>, string][] = [
      ["pubsub", { topic: "orders.*.created" }, "topic"],
      ["pubsub", { topic: "orders*" }, "topic"],
      ["kv", { collection: "a*b" }, "collection"],
      ["kv", { collection: "c", operations: ["create"] }, "operations.0"],
      ["docs", { collection: "c", operations: ["set"] }, "operations.0"],
      ["cron", { schedule: "* * * * *", timezone: "UTC" }, "schedule"],
      ["cron", { schedule: "0 * * * * *", timezone: "Nowhere/City" }, "timezone"],
      ["dead_letter", { collection: "x" }, "collection"],
      ["kv", { collection: "c", retry: { max_attempts: 0 } }, "retry.max_attempts"],
    ];
    for (const [kind, detail, field] of cases) {
      const res = await h.call("POST", `${base()}/triggers/${kind}`, { script_id: endpoint, ...detail });
      expect(res.statusCode, `${kind} ${JSON.stringify(detail)}`).toBe(422);
      expect(res.json().error.field).toBe(field);
    }
  });

  it("answers 404 for an unknown kind, app or trigger and 401 without a credential", async () => {
    expect((await h.call("POST", `${base()}/triggers/webhook`, { script_id: endpoint })).statusCode).toBe(
      404,
    );
    expect((await h.call("GET", `/api/v1/admin/apps/${newId()}/triggers`)).statusCode).toBe(404);
    expect((await h.call("GET", `${base()}/triggers/${newId()}`)).json().error.code).toBe(
      "trigger_not_found",
    );
    expect((await h.call("GET", `${base()}/triggers`, undefined, null)).statusCode).toBe(401);
  });

  it("gets, disables (PATCH {enabled}) and deletes a trigger; disabled triggers emit nothing", async () => {
    const created = (
      await h.call("POST", `${base()}/triggers/kv`, {
        script_id: endpoint,
        collection: "patchme",
        enabled: false,
        retry: { max_attempts: 2, backoff_ms: 10, max_backoff_ms: 20 },
      })
    ).json();
    expect(created).toMatchObject({
      enabled: false,
      retry: { max_attempts: 2, backoff_ms: 10, max_backoff_ms: 20 },
    });
    const url = `${base()}/triggers/${created.id}`;
    expect((await h.call("GET", url)).json().id).toBe(created.id);
    const patched = await h.call("PATCH", url, { enabled: true });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().enabled).toBe(true);
    expect((await h.call("PATCH", url, { enabled: true, kind: "docs" })).statusCode).toBe(422);
    expect((await h.call("DELETE", url)).statusCode).toBe(204);
    expect((await h.call("GET", url)).statusCode).toBe(404);
    expect((await h.call("DELETE", url)).statusCode).toBe(404);
  });

  it("manages topics: create 201, duplicate 409, list, get, delete", async () => {
    const created = await h.call("POST", `${base()}/topics`, { name: "news", external: true });
    expect(created.statusCode).toBe(201);
    expect(created.json()).toMatchObject({ name: "news", external: true, app_id: appId });
    expect((await h.call("POST", `${base()}/topics`, { name: "news" })).statusCode).toBe(409);
    expect((await h.call("POST", `${base()}/topics`, { name: "bad name" })).statusCode).toBe(422);
    await h.call("POST", `${base()}/topics`, { name: "internal" });
    const list = (await h.call("GET", `${base()}/topics`)).json();
    expect(list.items.map((t: { name: string; external: boolean }) => [t.name, t.external])).toEqual([
      ["internal", false],
      ["news", true],
    ]);
    expect((await h.call("GET", `${base()}/topics/news`)).json().external).toBe(true);
    expect((await h.call("DELETE", `${base()}/topics/internal`)).statusCode).toBe(204);
    expect((await h.call("GET", `${base()}/topics/internal`)).statusCode).toBe(404);
  });

  describe("email inbound webhook", () => {
    const message = {
      from: "a@example.com",
      to: ["shop@example.com"],
      cc: [],
      subject: "Order 7",
      text: "hello",
      html: "<p>hello</p>",
      received_at: "2026-11-21T11:59:00.000Z",
      message_id: "<m1@example.com>",
    };
    const post = (trigger: string, body: string, headers: Record<string, string> = {}, app = appId) =>
      h.built.app.inject({
        method: "POST",
        url: `/api/v1/email-inbound/${app}/${trigger}`,
        headers: { "content-type": "application/json", ...headers },
        payload: body,
      });
    const sign = (secret: string, body: string) =>
      `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
    let signed: string;
    let open: string;

    beforeAll(async () => {
      signed = (
        await h.call("POST", `${base()}/triggers/email`, { script_id: endpoint, inbound_secret: "s3cr3t" })
      ).json().id;
      open = (await h.call("POST", `${base()}/triggers/email`, { script_id: endpoint })).json().id;
    });

    const emails = async () =>
      ((await kvAll(h, appId, "seen")) as { email?: Record<string, unknown> }[]).flatMap((e) =>
        e.email ? [e.email] : [],
      );

    it("accepts a correctly signed message with 202; the script runs with ctx.event.email", async () => {
      const body = JSON.stringify(message);
      const res = await post(signed, body, { "x-signature": sign("s3cr3t", body) });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toEqual({ accepted: true, id: expect.any(String) });
      await drainUntil(h, async () => (await emails()).length === 1);
      expect(await emails()).toEqual([message]);
    });

    it("401 for a missing or wrong signature; 404 for unknown app or trigger", async () => {
      const body = JSON.stringify(message);
      expect((await post(signed, body)).statusCode).toBe(401);
      expect((await post(signed, body, { "x-signature": sign("other", body) })).statusCode).toBe(401);
      expect((await post(signed, `${body} `, { "x-signature": sign("s3cr3t", body) })).statusCode).toBe(401);
      expect((await post(newId(), body)).statusCode).toBe(404);
      expect((await post(signed, body, { "x-signature": sign("s3cr3t", body) }, otherApp)).statusCode).toBe(
        404,
      );
      expect((await post(endpoint, body)).statusCode).toBe(404);
    });

    it("400 for invalid JSON, 422 for the wrong shape, defaults for omitted optional fields", async () => {
      expect((await post(open, "{nope")).json().error.code).toBe("invalid_json");
      expect((await post(open, "{nope")).statusCode).toBe(400);
      const wrong = await post(open, JSON.stringify({ from: "a@example.com", to: "b@example.com" }));
      expect(wrong.statusCode).toBe(422);
      expect(wrong.json().error.field).toBe("to");
      expect((await post(open, JSON.stringify({ ...message, bcc: [] }))).statusCode).toBe(422);
      expect((await post(open, "[]")).statusCode).toBe(422);
      const acceptedAt = h.clock.iso();
      const minimal = await post(open, JSON.stringify({ from: "a@example.com", to: ["b@example.com"] }));
      expect(minimal.statusCode).toBe(202);
      await drainUntil(h, async () => (await emails()).length === 2);
      expect((await emails()).find((e) => e.to && (e.to as string[])[0] === "b@example.com")).toEqual({
        from: "a@example.com",
        to: ["b@example.com"],
        cc: [],
        subject: "",
        text: "",
        html: "",
        received_at: acceptedAt,
        message_id: null,
      });
    });
  });
});
