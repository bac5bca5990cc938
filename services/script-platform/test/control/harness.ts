import { FakeClock } from "@app/kit/clock";
import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import { type BuiltApp, buildApp } from "../../src/app.js";
import { envSpec } from "../../src/config.js";

export const ADMIN = { username: "root", password: "correct horse battery" };

export interface Harness {
  built: BuiltApp;
  clock: FakeClock;
  logs: ReturnType<typeof captureLogger>;
  announced: string[];
  dataDir: string;
  /** A bearer token of the bootstrap admin. */
  token: string;
  /** inject with the admin's bearer token; `as` overrides the token. */
  call(
    method: string,
    url: string,
    body?: unknown,
    as?: string | null,
    // biome-ignore lint/suspicious/noExplicitAny: response bodies are asserted field by field in tests
  ): Promise<{ statusCode: number; json(): any; headers: Record<string, unknown>; body: string }>;
  close(): Promise<void>;
}

/** A fresh app on a fresh database (SQLite, or PostgreSQL with TEST_BACKEND=postgres). */
export async function startHarness(
  env: Record<string, string> = {},
  opts: { login?: boolean } = {},
): Promise<Harness> {
  const testEnv = await createTestEnv("script_platform");
  const config = loadEnv(envSpec, {
    DATA_DIR: testEnv.dataDir,
    DATABASE_URL: testEnv.databaseUrl,
    PLATFORM_ADMIN_USERNAME: ADMIN.username,
    PLATFORM_ADMIN_PASSWORD: ADMIN.password,
    ...env,
  });
  const clock = new FakeClock("2026-11-21T12:00:00.000Z");
  const logs = captureLogger();
  const announced: string[] = [];
  let built: BuiltApp;
  try {
    built = await buildApp(config, { logger: logs.logger, clock, announce: (l) => announced.push(l) });
  } catch (err) {
    await testEnv.cleanup();
    throw err;
  }
  const h: Harness = {
    built,
    clock,
    logs,
    announced,
    dataDir: testEnv.dataDir,
    token: "",
    async call(method, url, body, as) {
      const token = as === undefined ? h.token : as;
      const res = await built.app.inject({
        method: method as "GET",
        url,
        headers: token ? { authorization: `Bearer ${token}` } : {},
        ...(body !== undefined ? { payload: body as object } : {}),
      });
      return res as never;
    },
    async close() {
      await built.app.close();
      await built.close();
      await testEnv.cleanup();
    },
  };
  if (opts.login !== false && config.PLATFORM_ADMIN_USERNAME) {
    const res = await h.call("POST", "/api/v1/admin/login", ADMIN, null);
    if (res.statusCode !== 200) throw new Error(`login failed: ${res.body}`);
    h.token = res.json().token;
  }
  return h;
}
