import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FakeClock } from "@app/kit/clock";
import { loadEnv } from "@app/kit/config";
import type { Database } from "@app/kit/db";
import { createTestDatabase, createTestEnv, type TestEnv, testBackend } from "@app/kit/db/testing";
import { AppError } from "@app/kit/errors";
import { captureLogger } from "@app/kit/logger";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type BuiltApp, buildApp } from "../../src/app.js";
import { envSpec } from "../../src/config.js";
import {
  createLoginThrottle,
  LOGIN_FAILURES_ALLOWED,
  LOGIN_WINDOW_MS,
  type LoginThrottle,
} from "../../src/control/login-throttle.js";
import { migrations } from "../../src/db/migrations/index.js";
import type { PlatformDB } from "../../src/db/schema.js";

/** The 429 a check throws (code and Retry-After seconds), or null when the login may proceed. */
async function refusal(p: Promise<unknown>): Promise<{ code: string; retryAfter: number } | null> {
  try {
    await p;
    return null;
  } catch (err) {
    if (!(err instanceof AppError) || err.status !== 429) throw err;
    return { code: err.code, retryAfter: Number(err.headers["retry-after"]) };
  }
}

describe("admin login throttle: counts in the database, shared by every process", () => {
  let database: Database<PlatformDB>;
  let cleanup: () => Promise<void>;
  const clock = new FakeClock("2026-11-21T12:00:00.000Z");
  // Two throttles on one database stand for two processes.
  let one: LoginThrottle;
  let two: LoginThrottle;

  beforeAll(async () => {
    ({ database, cleanup } = await createTestDatabase<PlatformDB>(migrations));
    one = createLoginThrottle({ database, clock });
    two = createLoginThrottle({ database, clock });
  });
  afterAll(async () => cleanup());
  beforeEach(async () => {
    await database.db.deleteFrom("login_failures").execute();
  });

  it("locks a username after 10 failures spread over two processes, until the window ends", async () => {
    for (let i = 0; i < LOGIN_FAILURES_ALLOWED; i++) {
      await (i % 2 === 0 ? one : two).check("Tess");
      await (i % 2 === 0 ? one : two).failed(i % 3 === 0 ? "TESS" : "tess");
      clock.set(clock.now() + 1000);
    }
    const locked = await refusal(one.check("tess"));
    expect(locked?.code).toBe("too_many_attempts");
    // Retry-After runs to the end of the window that began with the first failure.
    expect(locked?.retryAfter).toBe((LOGIN_WINDOW_MS - LOGIN_FAILURES_ALLOWED * 1000) / 1000);
    expect(await refusal(two.check("tess"))).not.toBeNull();
    // Other usernames are unaffected.
    expect(await refusal(two.check("root"))).toBeNull();
    // The window started at the first failure: it ends 15 minutes after it, not after the last.
    clock.set(clock.now() - LOGIN_FAILURES_ALLOWED * 1000 + LOGIN_WINDOW_MS + 1);
    expect(await refusal(one.check("tess"))).toBeNull();
    // A failure after the window starts a new count of one.
    await two.failed("tess");
    const row = await database.db.selectFrom("login_failures").selectAll().executeTakeFirstOrThrow();
    expect(Number(row.failures)).toBe(1);
  });

  it("a success clears the count for every process; usernames are stored only as a hash", async () => {
    for (let i = 0; i < LOGIN_FAILURES_ALLOWED - 1; i++) await one.failed("ann");
    const rows = await database.db.selectFrom("login_failures").selectAll().execute();
    expect(rows).toHaveLength(1);
    expect(rows[0]?.username_key).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(rows)).not.toContain("ann");
    await two.succeeded("Ann");
    await one.failed("ann");
    expect(await refusal(one.check("ann"))).toBeNull();
    expect(
      Number((await database.db.selectFrom("login_failures").selectAll().executeTakeFirstOrThrow()).failures),
    ).toBe(1);
  });

  it("forgets windows that ended as new failures come in", async () => {
    await one.failed("old-1");
    await one.failed("old-2");
    clock.set(clock.now() + LOGIN_WINDOW_MS + 1);
    await two.failed("new");
    const keys = await database.db.selectFrom("login_failures").select("username_key").execute();
    expect(keys).toHaveLength(1);
  });

  it("counts concurrent failures from two processes exactly", async () => {
    await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? one : two).failed("race")));
    const row = await database.db.selectFrom("login_failures").selectAll().executeTakeFirstOrThrow();
    expect(Number(row.failures)).toBe(8);
  });
});

// Two app instances built on one PostgreSQL database (as two processes would be): a lock-out
// earned through one is enforced by the other. (On SQLite one file serves one process.)
describe.skipIf(testBackend() !== "postgres")("two instances on one PostgreSQL database", () => {
  let env: TestEnv;
  const built: BuiltApp[] = [];
  const dirs: string[] = [];
  const ADMIN = { username: "root", password: "correct horse battery" };

  beforeAll(async () => {
    env = await createTestEnv("sp_throttle");
    for (const name of ["a", "b"]) {
      const dir = mkdtempSync(join(tmpdir(), `sp-throttle-${name}-`));
      dirs.push(dir);
      const config = loadEnv(envSpec, {
        DATA_DIR: dir,
        DATABASE_URL: env.databaseUrl,
        PLATFORM_SECRET_KEY: "ab".repeat(32),
        PLATFORM_ADMIN_USERNAME: ADMIN.username,
        PLATFORM_ADMIN_PASSWORD: ADMIN.password,
        PLATFORM_WORKERS: "1",
      });
      built.push(
        await buildApp(config, {
          logger: captureLogger().logger,
          clock: new FakeClock("2026-11-21T12:00:00.000Z"),
        }),
      );
    }
  }, 60_000);
  afterAll(async () => {
    for (const b of built) {
      await b.app.close();
      await b.close();
    }
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    await env?.cleanup();
  });

  const login = (b: BuiltApp, password: string) =>
    b.app.inject({
      method: "POST",
      url: "/api/v1/admin/login",
      payload: { username: ADMIN.username, password },
    });

  it("failures through instance A lock the account on instance B", async () => {
    const [a, b] = built as [BuiltApp, BuiltApp];
    for (let i = 0; i < LOGIN_FAILURES_ALLOWED / 2; i++) {
      expect((await login(a, `wrong-a-${i}`)).statusCode).toBe(401);
      expect((await login(b, `wrong-b-${i}`)).statusCode).toBe(401);
    }
    for (const inst of [a, b]) {
      const res = await login(inst, ADMIN.password);
      expect(res.statusCode).toBe(429);
      expect(res.json().error.code).toBe("too_many_attempts");
      expect(Number(res.headers["retry-after"])).toBeGreaterThan(0);
    }
  });
});
