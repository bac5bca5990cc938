import { sql } from "@app/kit/db";
import { createTestEnv, testBackend } from "@app/kit/db/testing";
import { startTcpProxy } from "@app/kit/testing/tcp-proxy";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { type Gallery, startGallery } from "./harness.js";

// The database going away mid-load: every route that needs it answers 503 database_unavailable
// with Retry-After (never 500), the process stays up, and the log has one line per outage.
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

type Res = { statusCode: number; headers: Record<string, unknown>; json(): { error: { code: string } } };

function expectOutageAnswer(res: Res) {
  expect(res.statusCode).toBe(503);
  expect(res.headers["retry-after"]).toBe("5");
  expect(res.json().error.code).toBe("database_unavailable");
}

const parsed = (g: Gallery) => g.logs.lines.map((l) => JSON.parse(l) as { level: number; msg: string });

function expectOneOutageLine(g: Gallery) {
  const lines = parsed(g);
  expect(lines.filter((l) => l.msg.startsWith("database unavailable")).length).toBe(1);
  // No stack per request.
  expect(lines.filter((l) => l.level >= 50)).toEqual([]);
  expect(g.logs.text()).not.toContain('"stack"');
}

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
        const admin = new pg.Client({ connectionString: url.toString() });
        await admin.connect();
        await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        );
        await admin.end();
      }
      for (const res of await inFlight) expect([201, 503]).toContain(res.statusCode);
      for (const res of await joins(g, 20, "Outage")) expectOutageAnswer(res);
      expectOutageAnswer(await g.call("GET", "/feed", { token }));
      expectOutageAnswer(await g.call("GET", "/me/context", { token }));
      expect((await g.built.app.inject({ url: "/readyz" })).statusCode).toBe(503);
      expectOneOutageLine(g);

      await proxy.start();
      await expect
        .poll(async () => (await g.call("POST", "/join", { body: { name: "After" } })).statusCode)
        .toBe(201);
      await expect
        .poll(async () => {
          await g.call("GET", "/feed", { token });
          return parsed(g).filter((l) => l.msg === "database reachable again").length;
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
        if (res.statusCode !== 201) expectOutageAnswer(res);
      }
    expect(statuses.has(503)).toBe(true);
    expectOneOutageLine(g);
    // Reads still work.
    expect((await g.call("GET", "/feed", { token })).statusCode).toBe(200);
  });
});
