import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { executionsRepo } from "../../src/execution/executions-repository.js";
import { EXECUTION_LOG_RETENTION_MS } from "../../src/execution/runtime.js";
import { principalToJson } from "../../src/triggers/principal.js";
import { type Harness, startHarness } from "../control/harness.js";
import { principalWith } from "./sdk-harness.js";

describe("execution through HTTP: sync and async dispatch via the outbox", () => {
  let h: Harness;
  let appId: string;
  let server: Server;
  let base = "";
  const pending: (() => void)[] = [];
  const runtime = () => h.built.engine.runtime;
  const inject = (
    method: string,
    url: string,
    opts: { payload?: unknown; headers?: Record<string, string> } = {},
  ) =>
    h.built.app.inject({
      method: method as "GET",
      url,
      headers: { host: "rt.test", ...opts.headers },
      ...(opts.payload !== undefined ? { payload: opts.payload as string } : {}),
    });
  const script = async (name: string, source: string, extra: Record<string, unknown> = {}) => {
    const res = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name,
      kind: "endpoint",
      source,
      ...extra,
    });
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json().id as string;
  };
  const route = async (scriptId: string, path: string, method = "ANY", dispatch_mode = "sync") => {
    const res = await h.call("POST", `/api/v1/admin/scripts/${scriptId}/routes`, {
      path,
      method,
      dispatch_mode,
      host_kind: "any",
    });
    if (res.statusCode !== 201) throw new Error(res.body);
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/hang") pending.push(() => res.end("released"));
      else res.end("ok");
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    // Three workers and no per-app cap below them: the dispatcher's slots (PLATFORM_MAX_CONCURRENCY) are tested here.
    h = await startHarness({
      PLATFORM_MAX_CONCURRENCY: "2",
      PLATFORM_WORKERS: "3",
      PLATFORM_APP_CONCURRENCY: "3",
      PLATFORM_HTTP_ALLOW_PRIVATE: "true",
    });
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "rt" })).json().id;
    await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "rt.test" });
  });
  afterAll(async () => {
    for (const p of pending.splice(0)) p();
    await h.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it("runs a sync route and returns the handler's value as JSON, with ctx as the contract lists", async () => {
    const id = await script(
      "greet",
      `export default async function (ctx) {
        log.info("hello", ctx.request.params.name);
        const visits = kv.collection("visits");
        const n = ((await visits.get("count")) ?? 0) + 1;
        await visits.set("count", n);
        const { execution_id, script_id, script_name, app_id, request_id, invocation_type, sdk_version, request, event } = ctx;
        return { n, execution_id, script_id, script_name, app_id, request_id, invocation_type, sdk_version, event,
          method: request.method, path: request.path, params: request.params, query: request.query, rest: request.rest, ua: request.headers["x-test"], body: request.body };
      }`,
    );
    await route(id, "/greet/:name");
    const res = await inject("POST", "/greet/ada?x=1&y=two", {
      payload: { hello: "world" },
      headers: { "x-test": "t", "x-request-id": "req-12345678" },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^application\/json/);
    const body = res.json();
    expect(body).toMatchObject({
      n: 1,
      script_id: id,
      script_name: "greet",
      app_id: appId,
      request_id: "req-12345678",
      invocation_type: "http",
      sdk_version: "1.7",
      event: null,
      method: "POST",
      path: "/greet/ada",
      params: { name: "ada" },
      query: { x: "1", y: "two" },
      rest: "",
      ua: "t",
      body: { hello: "world" },
    });
    expect(res.headers["x-execution-id"]).toBe(body.execution_id);
    expect((await inject("POST", "/greet/bob")).json().n).toBe(2);
    await runtime().dispatcher.idle();
    const list = (await h.call("GET", `/api/v1/admin/apps/${appId}/executions?limit=1`)).json();
    expect(list.items).toHaveLength(1);
    expect(list.items[0]).toMatchObject({
      script_id: id,
      status: "ok",
      invocation_type: "http",
      logs: [{ level: "info", message: "hello bob" }],
    });
    expect(typeof list.items[0].duration_ms).toBe("number");
    const page2 = (
      await h.call("GET", `/api/v1/admin/apps/${appId}/executions?limit=1&cursor=${list.next_cursor}`)
    ).json();
    expect(page2.items[0].id).toBe(body.execution_id);
    expect(await h.built.ctx.database.db.selectFrom("outbox").selectAll().execute()).toEqual([]);
    expect((await h.call("GET", `/api/v1/admin/apps/${appId}/executions`, undefined, null)).statusCode).toBe(
      401,
    );
  });

  it("applies the result convention: structured responses, text and bytes", async () => {
    const id = await script(
      "shapes",
      `export default (ctx) => {
        const k = ctx.request.query.k;
        if (k === "structured") return { statusCode: 201, headers: { "x-n": 5, "content-length": "1" }, body: { made: true } };
        if (k === "text") return "plain text";
        if (k === "bytes") return { statusCode: 200, body: new Uint8Array([1, 2, 3]) };
        if (k === "empty") return { statusCode: 204 };
        return [1, 2];
      }`,
    );
    await route(id, "/shapes");
    const s = await inject("GET", "/shapes?k=structured");
    expect([s.statusCode, s.headers["x-n"], s.json()]).toEqual([201, "5", { made: true }]);
    const t = await inject("GET", "/shapes?k=text");
    expect([t.statusCode, t.headers["content-type"], t.body]).toEqual([
      200,
      "text/plain; charset=utf-8",
      "plain text",
    ]);
    const b = await inject("GET", "/shapes?k=bytes");
    expect([b.headers["content-type"], [...b.rawPayload]]).toEqual(["application/octet-stream", [1, 2, 3]]);
    expect((await inject("GET", "/shapes?k=empty")).statusCode).toBe(204);
    expect((await inject("GET", "/shapes")).json()).toEqual([1, 2]);
  });

  it("maps failures: 502 script error, 507 limits, 404 unmatched, 400 bad JSON, 413 over 10 MiB", async () => {
    const thrower = await script("thrower", `export default () => { throw new RangeError("bad input"); }`);
    await route(thrower, "/throw");
    const e = await inject("GET", "/throw");
    expect(e.statusCode).toBe(502);
    expect(e.json().error).toEqual({
      code: "script_error",
      message: "The script failed: RangeError: bad input",
    });
    const looper = await script("looper", `export default () => { for (;;) {} }`, {
      sandbox: { max_operations: 100000 },
    });
    await route(looper, "/loop");
    const l = await inject("GET", "/loop");
    expect([l.statusCode, l.json().error.code]).toEqual([507, "operation_limit"]);
    expect((await inject("GET", "/nothing/here")).json()).toEqual({
      error: { code: "not_found", message: "No route matches this request." },
    });
    expect((await inject("GET", "/greet/x", { headers: { host: "unknown.example" } })).statusCode).toBe(404);
    const bad = await inject("POST", "/greet/x", {
      payload: "{nope",
      headers: { "content-type": "application/json" },
    });
    expect([bad.statusCode, bad.json().error.code]).toEqual([400, "invalid_json"]);
    const big = await inject("POST", "/greet/x", {
      payload: "x".repeat(10 * 1024 * 1024 + 1),
      headers: { "content-type": "text/plain" },
    });
    expect([big.statusCode, big.json().error.code]).toEqual([413, "payload_too_large"]);
    expect((await inject("GET", "/api/v1/nope")).statusCode).toBe(404);
    await runtime().dispatcher.idle();
    const codes = async (status: string) =>
      (await h.call("GET", `/api/v1/admin/apps/${appId}/executions?status=${status}`))
        .json()
        .items.map((x: { status: string; error: { code: string } }) => [x.status, x.error.code]);
    expect(await codes("error")).toContainEqual(["error", "script_error"]);
    expect(await codes("limit")).toContainEqual(["limit", "operation_limit"]);
  });

  it("answers an async route with 202 and runs the script through the outbox", async () => {
    const id = await script(
      "later",
      `export default async (ctx) => { await kv.collection("async").set("seen", ctx.request.body); }`,
    );
    await route(id, "/later", "POST", "async");
    const res = await inject("POST", "/later", {
      payload: "payload text",
      headers: { "content-type": "text/plain" },
    });
    expect(res.statusCode).toBe(202);
    const { accepted_at, execution_id } = res.json();
    expect(accepted_at).toBe(h.clock.iso());
    await h.clock.advance(1000);
    await runtime().dispatcher.idle();
    const ex = await h.built.ctx.database.db
      .selectFrom("executions")
      .selectAll()
      .where("id", "=", execution_id)
      .executeTakeFirst();
    expect(ex?.status).toBe("succeeded");
    const kv = await h.built.ctx.database.db
      .selectFrom("kv_entries")
      .selectAll()
      .where("collection", "=", "async")
      .executeTakeFirstOrThrow();
    expect(JSON.parse(kv.value)).toBe("payload text");
  });

  it("bounds the async queue per app: beyond it 503 queue_full with Retry-After", async () => {
    const id = await script("queued", `export default () => null`);
    await route(id, "/queued", "POST", "async");
    await runtime().dispatcher.stop();
    runtime().limits.maxPendingAsyncPerApp = 2;
    try {
      expect((await inject("POST", "/queued")).statusCode).toBe(202);
      expect((await inject("POST", "/queued")).statusCode).toBe(202);
      const full = await inject("POST", "/queued");
      expect([full.statusCode, full.headers["retry-after"], full.json().error.code]).toEqual([
        503,
        "5",
        "queue_full",
      ]);
    } finally {
      runtime().limits.maxPendingAsyncPerApp = 10_000;
      await runtime().dispatcher.start();
    }
    await h.clock.advance(1000);
    await runtime().dispatcher.idle();
    expect(
      await h.built.ctx.database.db.selectFrom("outbox").selectAll().where("script_id", "=", id).execute(),
    ).toEqual([]);
  });

  it("runs by id on /api/v1/execute/{id}, any method; an admin credential becomes the principal", async () => {
    const id = await script(
      "who",
      `export default async (ctx) => ({ m: ctx.request.method, auth: ctx.request.headers.authorization ?? null, v: await secrets.list() })`,
    );
    const anon = await h.call("DELETE", `/api/v1/execute/${id}`, undefined, null);
    expect(anon.statusCode).toBe(200);
    expect(anon.json()).toEqual({ m: "DELETE", auth: null, v: [] });
    const admin = await h.call("PATCH", `/api/v1/execute/${id}`);
    expect(admin.statusCode).toBe(200);
    expect(admin.json().auth).toBeNull();
    expect((await h.call("GET", `/api/v1/execute/${id}`, undefined, "bogus-token")).statusCode).toBe(401);
    expect((await h.call("GET", `/api/v1/execute/${newId()}`, undefined, null)).json().error.code).toBe(
      "script_not_found",
    );
    const mod = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name: "lib",
      kind: "module",
      source: "export const x = 1;",
    });
    expect((await h.call("GET", `/api/v1/execute/${mod.json().id}`, undefined, null)).statusCode).toBe(422);
  });

  it("runs sync requests beyond PLATFORM_MAX_CONCURRENCY while the earlier ones are parked on I/O", async () => {
    const id = await script(
      "hang",
      `export default async (ctx) => (await http.get(ctx.request.query.u)).body_raw`,
    );
    await route(id, "/hang");
    const u = encodeURIComponent(`${base}/hang`);
    const all = Array.from({ length: 4 }, () => inject("GET", `/hang?u=${u}`));
    // Four runs wait on the upstream at once with two slots: a parked run holds none.
    while (pending.length < 4) await new Promise((r) => setImmediate(r));
    for (const p of pending.splice(0)) p();
    expect((await Promise.all(all)).map((r) => [r.statusCode, r.body])).toEqual(
      Array(4).fill([200, "released"]),
    );
    expect((await inject("GET", `/hang?u=${encodeURIComponent(`${base}/ok`)}`)).body).toBe("ok");
  });

  it("answers 504 when the script runs past its timeout", async () => {
    const id = await script(
      "slow",
      `export default async (ctx) => (await http.get(ctx.request.query.u)).body_raw`,
      { timeout_seconds: 1 },
    );
    await route(id, "/slow");
    const res = inject("GET", `/slow?u=${encodeURIComponent(`${base}/hang`)}`);
    while (pending.length < 1) await new Promise((r) => setImmediate(r));
    await h.clock.advance(1000);
    const r = await res;
    expect([r.statusCode, r.json().error.code]).toEqual([504, "timeout"]);
    for (const p of pending.splice(0)) p();
  });

  it("records a result for a dropped inbox as an abandoned execution", async () => {
    const id = await script("quick", `export default () => "done"`);
    const waiter = runtime().inbox.register();
    if (!waiter) throw new Error("no inbox");
    waiter.drop();
    const now = h.clock.iso();
    await runtime().dispatcher.submitOwn({
      id: newId(),
      app_id: appId,
      source_kind: "http",
      trigger_id: null,
      script_id: id,
      execution_id: newId(),
      payload: JSON.stringify({
        request: { method: "GET", path: "/", headers: {}, body: null, params: {}, query: {}, rest: "" },
        request_id: null,
      }),
      due_at: now,
      attempts: 0,
      depth: 0,
      principal: null,
      reply_to: waiter.replyTo,
      claimed_by: null,
      lease_until: null,
      created_at: now,
    });
    await runtime().dispatcher.idle();
    const rows = await h.built.ctx.database.db.selectFrom("abandoned_executions").selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      app_id: appId,
      script_id: id,
      reply_to: waiter.replyTo,
      status: "succeeded",
    });
    expect(JSON.parse(rows[0]?.result ?? "null")).toEqual({ value: "done" });
  });

  it("retries a crashed claim once its lease has run out, and leaves a live lease alone", async () => {
    const id = await script(
      "orphan",
      `export default async (ctx) => { await kv.collection("orphans").set(ctx.request.query.k, 1); }`,
    );
    const now = h.clock.now();
    const row = (k: string, leaseUntil: string) => ({
      id: newId(),
      app_id: appId,
      source_kind: "http",
      trigger_id: null,
      script_id: id,
      execution_id: null,
      payload: JSON.stringify({
        request: { method: "GET", path: "/", headers: {}, body: null, params: {}, query: { k }, rest: "" },
        request_id: null,
      }),
      due_at: new Date(now - 10_000).toISOString(),
      attempts: 0,
      depth: 0,
      principal: null,
      reply_to: null,
      claimed_by: "crashed-process",
      lease_until: leaseUntil,
      created_at: new Date(now - 10_000).toISOString(),
    });
    await h.built.ctx.database.db
      .insertInto("outbox")
      .values([
        row("expired", new Date(now - 1).toISOString()),
        row("live", new Date(now + 60_000).toISOString()),
      ])
      .execute();
    await h.clock.advance(1000);
    await runtime().dispatcher.idle();
    const keys = await h.built.ctx.database.db
      .selectFrom("kv_entries")
      .select("key")
      .where("collection", "=", "orphans")
      .execute();
    expect(keys.map((k) => k.key)).toEqual(["expired"]);
    const left = await h.built.ctx.database.db.selectFrom("outbox").select("claimed_by").execute();
    expect(left).toEqual([{ claimed_by: "crashed-process" }]);
    await h.built.ctx.database.db.deleteFrom("outbox").execute();
  });

  it("hands a failed async run to the failure policy", async () => {
    const id = await script("fails", `export default () => { throw new Error("no"); }`);
    await route(id, "/fails", "POST", "async");
    expect((await inject("POST", "/fails")).statusCode).toBe(202);
    await h.clock.advance(1000);
    await runtime().dispatcher.idle();
    const rows = await h.built.ctx.database.db
      .selectFrom("outbox")
      .selectAll()
      .where("script_id", "=", id)
      .execute();
    const ex = await h.built.ctx.database.db
      .selectFrom("executions")
      .selectAll()
      .where("script_id", "=", id)
      .execute();
    expect(ex.length).toBeGreaterThan(0);
    expect(new Set(ex.map((e) => e.status))).toEqual(new Set(["failed"]));
    // Default policy: rescheduled for a retry (released, every attempt counted, each its own
    // execution) or dead-lettered once the attempts run out.
    for (const r of rows)
      expect(r).toMatchObject({ claimed_by: null, lease_until: null, attempts: ex.length });
    expect(new Set(ex.map((e) => e.id)).size).toBe(ex.length);
  });

  it("bounds the executions log by age", async () => {
    const db = h.built.ctx.database.db;
    const old = {
      id: newId(),
      app_id: appId,
      script_id: newId(),
      invocation_type: "http",
      status: "succeeded",
      duration_ms: 1,
      logs: "[]",
      error: null,
      finished_at: null,
    };
    await db
      .insertInto("executions")
      .values({ ...old, created_at: new Date(h.clock.now() - 8 * 24 * 3600 * 1000).toISOString() })
      .execute();
    const before = (await db.selectFrom("executions").select("id").execute()).length;
    expect(
      await executionsRepo(h.built.ctx.database).prune(
        new Date(h.clock.now() - EXECUTION_LOG_RETENTION_MS).toISOString(),
      ),
    ).toBe(1);
    expect((await db.selectFrom("executions").select("id").execute()).length).toBe(before - 1);
  });

  it("runs a triggered row with ctx.event and checks the row's principal", async () => {
    const id = await script(
      "on-event",
      `export default async (ctx) => { await kv.collection("events").set(String(ctx.event.pubsub.message.i), ctx.invocation_type); }`,
    );
    const now = h.clock.iso();
    const row = (i: number, principal: string | null) => ({
      id: newId(),
      app_id: appId,
      source_kind: "pubsub",
      trigger_id: null,
      script_id: id,
      payload: JSON.stringify({ event: { pubsub: { topic: "t", message: { i } } } }),
      due_at: now,
      principal,
      reply_to: null,
      created_at: now,
    });
    const viewer = principalToJson(principalWith(appId, "viewer"));
    const editor = principalToJson(principalWith(appId, "editor"));
    await h.built.ctx.database.db
      .insertInto("outbox")
      .values([row(1, null), row(2, JSON.stringify(editor)), row(3, JSON.stringify(viewer))])
      .execute();
    await h.clock.advance(1000);
    await runtime().dispatcher.idle();
    const keys = await h.built.ctx.database.db
      .selectFrom("kv_entries")
      .select(["key", "value"])
      .where("collection", "=", "events")
      .orderBy("key")
      .execute();
    expect(keys).toEqual([
      { key: "1", value: '"pubsub"' },
      { key: "2", value: '"pubsub"' },
    ]);
    const failed = await h.built.ctx.database.db
      .selectFrom("executions")
      .select("error")
      .where("script_id", "=", id)
      .where("status", "=", "failed")
      .execute();
    expect(JSON.parse(failed[0]?.error ?? "{}").message).toMatch(/kv.set: permission denied/);
    await h.built.ctx.database.db.deleteFrom("outbox").execute();
  });
});
