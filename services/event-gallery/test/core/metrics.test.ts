import { sql } from "@app/kit/db";
import { parsePrometheus, sampleValue } from "@app/kit/testing/metrics";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, seedUpload, startGallery } from "./harness.js";

const TOKEN = "gallery-metrics-token-0123";

describe("event-gallery /metrics", () => {
  let g: Gallery;
  const scrape = async () => {
    const res = await g.built.app.inject({
      method: "GET",
      url: "/metrics",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.statusCode).toBe(200);
    return { text: res.body, samples: parsePrometheus(res.body) };
  };
  beforeAll(async () => {
    g = await startGallery({ env: { METRICS_TOKEN: TOKEN } });
  });
  afterAll(async () => {
    await g.close();
  });

  it("is guarded by METRICS_TOKEN", async () => {
    const res = await g.built.app.inject({ method: "GET", url: "/metrics" });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe("unauthorized");
  });

  it("counts requests by route pattern, with no id or raw path in any label", async () => {
    const guest = await g.join("Metric Guest");
    expect(sampleValue((await scrape()).samples, "gallery_derivative_backlog")).toBe(0);
    const id = await seedUpload(g, guest.id);
    for (let i = 0; i < 2; i++)
      expect((await g.call("PUT", `/upload/${id}/like`, { token: guest.token })).statusCode).toBe(200);
    expect((await g.call("GET", `/no/such/${id}`)).statusCode).toBe(404);
    const { text, samples } = await scrape();
    expect(
      sampleValue(samples, "http_requests_total", {
        method: "PUT",
        route: "/api/v1/upload/:id/like",
        status: "200",
      }),
    ).toBe(2);
    expect(sampleValue(samples, "http_requests_total", { route: "(unmatched)", status: "404" })).toBe(1);
    expect(text).not.toContain(id);
    expect(text).not.toContain("/no/such");
    expect(sampleValue(samples, "db_pool_acquire_waits_total")).toBeGreaterThanOrEqual(0);
  });

  it("moves the derivative backlog, export job state and SSE client gauges with real state", async () => {
    let s = (await scrape()).samples;
    // The upload above (a row without files) waits for derivatives: the workers start only on listen.
    expect(sampleValue(s, "gallery_derivative_backlog")).toBe(1);
    expect(s.filter((x) => x.name === "gallery_export_job_state")).toEqual([]);
    expect(sampleValue(s, "gallery_sse_clients")).toBe(0);

    const admin = await g.adminToken();
    expect((await g.call("POST", "/host/event/release", { token: admin })).statusCode).toBe(200);
    s = (await scrape()).samples;
    expect(sampleValue(s, "gallery_export_job_state", { kind: "zip", status: "pending" })).toBe(1);
    expect(sampleValue(s, "gallery_export_job_state", { kind: "zip", status: "done" })).toBe(0);

    const guest = await g.join("Stream Guest");
    const base = await g.built.app.listen({ port: 0, host: "127.0.0.1" });
    const ticket = (await g.call("POST", "/stream/ticket", { token: guest.token })).json().ticket as string;
    const controller = new AbortController();
    const res = await fetch(`${base}/api/v1/stream?ticket=${encodeURIComponent(ticket)}`, {
      signal: controller.signal,
    });
    expect(res.status).toBe(200);
    expect(sampleValue((await scrape()).samples, "gallery_sse_clients")).toBe(1);
    controller.abort();
    await res.body?.cancel().catch(() => {});
    // The server notices the closed socket asynchronously.
    await expect.poll(async () => sampleValue((await scrape()).samples, "gallery_sse_clients")).toBe(0);
  });
});

describe("event-gallery /readyz", () => {
  it("is ready on a migrated database; 503 migrations_pending when one is missing", async () => {
    const g = await startGallery();
    try {
      const ok = await g.built.app.inject({ method: "GET", url: "/readyz" });
      expect(ok.statusCode).toBe(200);
      expect(ok.body).toBe("ok");
      const db = g.built.ctx.database.db;
      await sql`DELETE FROM schema_migrations WHERE version = (SELECT MAX(version) FROM schema_migrations)`.execute(
        db,
      );
      const res = await g.built.app.inject({ method: "GET", url: "/readyz" });
      expect(res.statusCode).toBe(503);
      expect(res.headers["retry-after"]).toBeDefined();
      expect(res.json().error.code).toBe("migrations_pending");
    } finally {
      await g.close();
    }
  });

  it("answers 503 database_unavailable when the database is closed; /healthz stays 200", async () => {
    const g = await startGallery();
    try {
      await g.built.ctx.database.close();
      const res = await g.built.app.inject({ method: "GET", url: "/readyz" });
      expect(res.statusCode).toBe(503);
      expect(res.headers["retry-after"]).toBeDefined();
      expect(res.json()).toMatchObject({ error: { code: "database_unavailable" } });
      expect((await g.built.app.inject({ method: "GET", url: "/healthz" })).statusCode).toBe(200);
    } finally {
      await g.close();
    }
  });
});
