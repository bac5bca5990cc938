import { sql } from "@app/kit/db";
import { createTestEnv, testBackend } from "@app/kit/db/testing";
import { expectDatabaseUnavailable, expectOneOutageLine, terminateBackends } from "@app/kit/testing/outage";
import { startTcpProxy } from "@app/kit/testing/tcp-proxy";
import { afterEach, describe, expect, it } from "vitest";
import { type Gallery, startGallery } from "./harness.js";

// The database going away mid-load: every route that needs it answers 503 database_unavailable
// with Retry-After (never 500), the process stays up, and the log has one line per outage.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const joins = (g: Gallery, n: number, prefix: string) =>
  Promise.all(
    Array.from({ length: n }, (_, i) => g.call("POST", "/join", { body: { name: `${prefix} ${i}` } })),
  );

describe.runIf(testBackend() === "postgres")("event-gallery with PostgreSQL going away", () => {
  for (const how of ["cut", "stopped"] as const) {
    it(`answers 503 database_unavailable while the server is ${how}, then recovers`, async () => {
      const env = await createTestEnv("gallery_outage");
      cleanups.push(env.cleanup);
      const url = new URL(env.databaseUrl as string);
      const proxy = await startTcpProxy({ host: url.hostname, port: Number(url.port || 5432) });
      cleanups.push(() => proxy.stop());
      const g = await startGallery({ env: { DATABASE_URL: proxy.rewrite(url.toString()) }, keepEnv: env });
      cleanups.push(() => g.close());
      const { token } = await g.join("Before");

      // Mid-load: requests in flight when the connections go.
      const inFlight = joins(g, 30, "During");
      await proxy.stop();
      if (how === "stopped") {
        await terminateBackends(url.toString());
      }
      for (const res of await inFlight) expect([201, 503]).toContain(res.statusCode);
      for (const res of await joins(g, 20, "Outage")) expectDatabaseUnavailable(res);
      expectDatabaseUnavailable(await g.call("GET", "/feed", { token }));
      expectDatabaseUnavailable(await g.call("GET", "/me/context", { token }));
      expect((await g.built.app.inject({ url: "/readyz" })).statusCode).toBe(503);
      expectOneOutageLine(g.logs.lines);

      await proxy.start();
      await expect
        .poll(async () => (await g.call("POST", "/join", { body: { name: "After" } })).statusCode)
        .toBe(201);
      await expect
        .poll(async () => {
          await g.call("GET", "/feed", { token });
          return g.logs.lines.filter((l) => l.includes('"msg":"database reachable again"')).length;
        })
        .toBe(1);
    });
  }
});

describe.runIf(testBackend() === "sqlite")("event-gallery with SQLite failing to write", () => {
  it("answers 503 database_unavailable when the database cannot grow, never 500", async () => {
    const g = await startGallery();
    cleanups.push(() => g.close());
    const { token } = await g.join("Before");
    const db = g.built.ctx.database.db;
    const pages = await sql<{ page_count: number }>`PRAGMA page_count`.execute(db);
    // SQLite refuses to grow the file past its current size: the writes that need a new page
    // fail with SQLITE_FULL, as on a full disk.
    await sql.raw(`PRAGMA max_page_count = ${pages.rows[0]?.page_count}`).execute(db);
    const statuses = new Set<number>();
    for (let round = 0; round < 20 && !statuses.has(503); round++)
      for (const res of await joins(g, 25, `Guest ${round}`)) {
        statuses.add(res.statusCode);
        if (res.statusCode !== 201) expectDatabaseUnavailable(res);
      }
    expect(statuses.has(503)).toBe(true);
    expectOneOutageLine(g.logs.lines);
    // Reads still work.
    expect((await g.call("GET", "/feed", { token })).statusCode).toBe(200);
  });
});
