import { sql } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import { parsePrometheus, sampleValue } from "@app/kit/testing/metrics";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./harness.js";

const TOKEN = "platform-metrics-token-42";

describe("script-platform /metrics", () => {
  let h: Harness;
  const scrape = async () => {
    const res = await h.call("GET", "/metrics", undefined, TOKEN);
    expect(res.statusCode).toBe(200);
    return { text: res.body, samples: parsePrometheus(res.body) };
  };
  beforeAll(async () => {
    h = await startHarness({ METRICS_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await h.close();
  });

  it("is guarded by METRICS_TOKEN (an admin session is not enough)", async () => {
    const res = await h.call("GET", "/metrics");
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe("unauthorized");
  });

  it("counts script runs by outcome and requests by route pattern, never by raw path or id", async () => {
    const appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "metrics" })).json().id as string;
    expect(
      (await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "metrics.test" })).statusCode,
    ).toBe(201);
    const script = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name: "hello",
      kind: "endpoint",
      source: "export default function (ctx) { return { hello: ctx.request.path }; }",
    });
    expect(script.statusCode).toBe(201);
    const route = await h.call("POST", `/api/v1/admin/scripts/${script.json().id}/routes`, {
      path: "/hello/*",
      method: "GET",
      host_kind: "any",
    });
    expect(route.statusCode).toBe(201);
    const before = sampleValue((await scrape()).samples, "platform_executions", { outcome: "ok" }) ?? 0;
    for (const tail of ["secret-tail-1", "secret-tail-2"]) {
      const res = await h.built.app.inject({
        method: "GET",
        url: `/hello/${tail}`,
        headers: { host: "metrics.test" },
      });
      expect(res.statusCode).toBe(200);
    }
    // A sync run answers before its execution row and outbox entry are settled (group commit).
    const gauge = async (name: string, labels = {}) => sampleValue((await scrape()).samples, name, labels);
    await expect.poll(() => gauge("platform_executions", { outcome: "ok" })).toBe(before + 2);
    // The executions filter's vocabulary, every value present.
    expect(
      (await scrape()).samples
        .filter((x) => x.name === "platform_executions")
        .map((x) => x.labels.outcome)
        .sort(),
    ).toEqual(["error", "limit", "ok", "timeout"]);
    await expect.poll(() => gauge("platform_outbox_depth")).toBe(0);
    const { text, samples } = await scrape();
    expect(sampleValue(samples, "http_requests_total", { method: "GET", route: "/*", status: "200" })).toBe(
      2,
    );
    expect(
      sampleValue(samples, "http_requests_total", {
        method: "POST",
        route: "/api/v1/admin/apps/:app/domains",
        status: "201",
      }),
    ).toBe(1);
    for (const raw of ["secret-tail", appId, "/hello/"]) expect(text).not.toContain(raw);
    // The engine registers its worker pool (runtime provider): the gauges read it live.
    expect(sampleValue(samples, "platform_worker_pool_size")).toBeGreaterThan(0);
    expect(sampleValue(samples, "platform_worker_pool_busy")).toBeGreaterThanOrEqual(0);
  });

  it("moves the outbox depth and unresolved dead-letter gauges with the database", async () => {
    const { database, clock } = h.built.ctx;
    let s = (await scrape()).samples;
    expect(sampleValue(s, "platform_outbox_depth")).toBe(0);
    expect(sampleValue(s, "platform_dead_letters_unresolved")).toBe(0);
    // Due in a year: the dispatcher leaves it waiting.
    const later = new Date(clock.now() + 365 * 86_400_000).toISOString();
    await database.db
      .insertInto("outbox")
      .values({
        id: newId(),
        app_id: "app",
        source_kind: "pubsub",
        trigger_id: null,
        script_id: "s",
        payload: "{}",
        due_at: later,
        principal: null,
        reply_to: null,
        claimed_by: null,
        lease_until: null,
        created_at: clock.iso(),
      })
      .execute();
    const dl = newId();
    await database.db
      .insertInto("dead_letters")
      .values({
        id: dl,
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
        created_at: clock.iso(),
        resolved_at: null,
        resolution: null,
      })
      .execute();
    s = (await scrape()).samples;
    expect(sampleValue(s, "platform_outbox_depth")).toBe(1);
    expect(sampleValue(s, "platform_dead_letters_unresolved")).toBe(1);
    await database.db
      .updateTable("dead_letters")
      .set({ resolved_at: clock.iso(), resolution: "ignored" })
      .where("id", "=", dl)
      .execute();
    expect(sampleValue((await scrape()).samples, "platform_dead_letters_unresolved")).toBe(0);
  });

  it("takes /metrics and /readyz out of the user route space", async () => {
    const res = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: (await h.call("POST", "/api/v1/admin/apps", { slug: "reserved" })).json().id,
      name: "m",
      kind: "endpoint",
      source: "export default function () { return 1; }",
    });
    for (const path of ["/metrics", "/readyz"]) {
      const r = await h.call("POST", `/api/v1/admin/scripts/${res.json().id}/routes`, {
        path,
        method: "GET",
        host_kind: "any",
      });
      expect(r.statusCode).toBe(422);
      expect(r.json().error.code).toBe("reserved_path");
    }
  });
});

describe("script-platform /readyz", () => {
  it("is 200 when migrated; 503 migrations_pending when one is missing; 503 database_unavailable when closed", async () => {
    const h = await startHarness({}, { login: false });
    try {
      const ok = await h.call("GET", "/readyz");
      expect(ok.statusCode).toBe(200);
      expect(ok.body).toBe("ok");
      const db = h.built.ctx.database.db;
      await sql`DELETE FROM schema_migrations WHERE version = (SELECT MAX(version) FROM schema_migrations)`.execute(
        db,
      );
      const pending = await h.call("GET", "/readyz");
      expect(pending.statusCode).toBe(503);
      expect(pending.headers["retry-after"]).toBeDefined();
      expect(pending.json().error.code).toBe("migrations_pending");
      await h.built.ctx.database.close();
      const down = await h.call("GET", "/readyz");
      expect(down.statusCode).toBe(503);
      expect(down.headers["retry-after"]).toBeDefined();
      expect(down.json().error.code).toBe("database_unavailable");
      expect((await h.call("GET", "/healthz")).statusCode).toBe(200);
    } finally {
      await h.close();
    }
  });
});
