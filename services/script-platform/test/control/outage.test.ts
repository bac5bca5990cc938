import { sql } from "@app/kit/db";
import { createTestEnv, testBackend } from "@app/kit/db/testing";
import { expectDatabaseUnavailable, expectOneOutageLine, terminateBackends } from "@app/kit/testing/outage";
import { startTcpProxy } from "@app/kit/testing/tcp-proxy";
import { afterEach, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./harness.js";

// The database going away mid-load: admin and user routes answer 503 database_unavailable with
// Retry-After (never 500), the process survives connections cut abruptly, the LISTEN connection
// comes back, and the log has one line per outage.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const hello = (h: Harness) => h.built.app.inject({ url: "/hello", headers: { host: "localhost" } });

describe.runIf(testBackend() === "postgres")("script-platform with PostgreSQL going away", () => {
  for (const how of ["cut", "stopped"] as const) {
    it(`answers 503 database_unavailable while the server is ${how}, then recovers`, async () => {
      const env = await createTestEnv("platform_outage");
      cleanups.push(env.cleanup);
      const url = new URL(env.databaseUrl as string);
      const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
      cleanups.push(() => proxy.stop());
      const h = await startHarness({ DATABASE_URL: proxy.rewrite(url.toString()) });
      cleanups.push(() => h.close());
      expect((await h.call("GET", "/api/v1/admin/apps")).statusCode).toBe(200);

      const inFlight = Promise.all([
        ...Array.from({ length: 10 }, () => h.call("GET", "/api/v1/admin/apps")),
        ...Array.from({ length: 10 }, () => hello(h)),
      ]);
      await proxy.stop();
      if (how === "stopped") {
        await terminateBackends(url.toString());
      }
      for (const res of await inFlight) expect(res.statusCode).not.toBe(500);
      for (let i = 0; i < 5; i++) {
        expectDatabaseUnavailable(await h.call("GET", "/api/v1/admin/apps"));
        expectDatabaseUnavailable(await h.call("POST", "/api/v1/admin/apps", { slug: `web${i}` }));
        expectDatabaseUnavailable(await hello(h));
      }
      expect((await h.built.app.inject({ url: "/readyz" })).statusCode).toBe(503);
      expectOneOutageLine(h.logs.lines);

      await proxy.start();
      await expect.poll(async () => (await h.call("GET", "/api/v1/admin/apps")).statusCode).toBe(200);
      await expect.poll(async () => (await hello(h)).statusCode).toBe(200);
    });
  }
});

describe.runIf(testBackend() === "sqlite")("script-platform with SQLite failing to write", () => {
  it("answers 503 database_unavailable when the database cannot grow, never 500", async () => {
    const h = await startHarness();
    cleanups.push(() => h.close());
    const db = h.built.ctx.database.db;
    const pages = await sql<{ page_count: number }>`PRAGMA page_count`.execute(db);
    await sql.raw(`PRAGMA max_page_count = ${pages.rows[0]?.page_count}`).execute(db);
    const statuses = new Set<number>();
    const big = "x".repeat(200);
    for (let i = 0; i < 200 && !statuses.has(503); i++) {
      const res = await h.call("POST", "/api/v1/admin/apps", { slug: `app${i}`, description: big });
      statuses.add(res.statusCode);
      if (res.statusCode !== 201) expectDatabaseUnavailable(res);
    }
    expect(statuses.has(503)).toBe(true);
    expectOneOutageLine(h.logs.lines);
    expect((await h.call("GET", "/api/v1/admin/apps")).statusCode).toBe(200);
  });
});
