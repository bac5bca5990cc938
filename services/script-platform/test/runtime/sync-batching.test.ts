import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";
import { until } from "./turns.js";

describe("sync requests: the seed's rows, written in shared commits", () => {
  let h: Harness;
  let appId: string;
  let server: Server;
  let base = "";
  const held: (() => void)[] = [];
  const runtime = () => h.built.engine.runtime;
  const db = () => h.built.ctx.database.db;
  const get = (url: string) => h.built.app.inject({ method: "GET", url, headers: { host: "batch.test" } });
  const endpoint = async (name: string, source: string, path: string) => {
    const res = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name,
      kind: "endpoint",
      source,
    });
    if (res.statusCode !== 201) throw new Error(res.body);
    const r = await h.call("POST", `/api/v1/admin/scripts/${res.json().id}/routes`, { path, method: "GET" });
    if (r.statusCode !== 201) throw new Error(r.body);
    return res.json().id as string;
  };

  beforeAll(async () => {
    server = createServer((req, res) => {
      held.push(() => res.end(`released ${req.url}`));
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    h = await startHarness({
      PLATFORM_WORKERS: "3",
      PLATFORM_APP_CONCURRENCY: "3",
      PLATFORM_MAX_CONCURRENCY: "64",
      PLATFORM_HTTP_ALLOW_PRIVATE: "true",
    });
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "batch" })).json().id;
    await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "batch.test" });
  });
  afterAll(async () => {
    for (const p of held.splice(0)) p();
    await h.close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it("each waiting request has its outbox row with reply_to; afterwards one record each, no row left", async () => {
    const scriptId = await endpoint(
      "hold",
      `export default async (ctx) => ({ n: ctx.request.query.n, got: (await http.get(ctx.request.query.u)).body_raw })`,
      "/hold",
    );
    const instance = runtime().inbox.instanceId;
    const responses = [0, 1, 2].map((n) => get(`/hold?n=${n}&u=${encodeURIComponent(`${base}/r${n}`)}`));
    // All three runs are inside their scripts, waiting on the held HTTP calls.
    await until(() => held.length === 3);
    const rows = await db().selectFrom("outbox").selectAll().where("app_id", "=", appId).execute();
    expect(rows).toHaveLength(3);
    const byN = new Map(
      rows.map((r) => [(JSON.parse(r.payload) as { request: { query: { n: string } } }).request.query.n, r]),
    );
    for (const r of rows) {
      expect(r).toMatchObject({
        source_kind: "http",
        script_id: scriptId,
        claimed_by: instance,
        trigger_id: null,
      });
      expect(r.reply_to?.startsWith(`${instance}/`)).toBe(true);
    }
    expect(new Set(rows.map((r) => r.reply_to)).size).toBe(3);
    expect(new Set(rows.map((r) => r.execution_id)).size).toBe(3);
    for (const p of held.splice(0)) p();
    const answered = await Promise.all(responses);
    for (const [n, res] of answered.entries()) {
      expect(res.statusCode).toBe(200);
      // Each request gets its own answer, from its own row's run.
      expect(res.json()).toEqual({ n: String(n), got: `released /r${n}` });
      expect(res.headers["x-execution-id"]).toBe(byN.get(String(n))?.execution_id);
    }
    await runtime().dispatcher.idle();
    expect(await db().selectFrom("outbox").select("id").where("app_id", "=", appId).execute()).toEqual([]);
    const records = await db()
      .selectFrom("executions")
      .select(["id", "status", "invocation_type"])
      .where("script_id", "=", scriptId)
      .execute();
    expect(records.map((r) => r.id).sort()).toEqual(rows.map((r) => r.execution_id).sort());
    expect(records.every((r) => r.status === "succeeded" && r.invocation_type === "http")).toBe(true);
    expect(await db().selectFrom("abandoned_executions").select("id").execute()).toEqual([]);
  });

  it("a burst of sync requests shares commits: fewer transactions than writes, every answer its own", async () => {
    const scriptId = await endpoint(
      "echo",
      `export default (ctx) => ({ i: Number(ctx.request.query.i) })`,
      "/echo",
    );
    await runtime().dispatcher.idle();
    const stats = runtime().dispatcher.commitStats;
    const before = { ...stats };
    const N = 24;
    const answers = await Promise.all(Array.from({ length: N }, (_, i) => get(`/echo?i=${i}`)));
    expect(answers.map((a) => a.statusCode)).toEqual(Array(N).fill(200));
    expect(answers.map((a) => a.json().i)).toEqual(Array.from({ length: N }, (_, i) => i));
    await runtime().dispatcher.idle();
    // Two writes per request (the row in; its record in and the row out), in shared transactions.
    expect(stats.items - before.items).toBe(2 * N);
    expect(stats.failed - before.failed).toBe(0);
    expect(stats.transactions - before.transactions).toBeLessThan(N);
    const records = await db()
      .selectFrom("executions")
      .select((eb) => eb.fn.countAll<number>().as("n"))
      .where("script_id", "=", scriptId)
      .executeTakeFirst();
    expect(Number(records?.n)).toBe(N);
    expect(await db().selectFrom("outbox").select("id").where("app_id", "=", appId).execute()).toEqual([]);
  });
});
