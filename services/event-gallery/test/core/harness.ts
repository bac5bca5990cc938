import { FakeClock } from "@app/kit/clock";
import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { captureLogger } from "@app/kit/logger";
import type { LightMyRequestResponse } from "fastify";
import { type AppDeps, type BuiltApp, buildApp } from "../../src/app.js";
import { envSpec } from "../../src/config.js";

export const ADMIN_PASSWORD = "correct horse battery staple";

export interface Gallery {
  built: BuiltApp;
  clock: FakeClock;
  logs: ReturnType<typeof captureLogger>;
  dataDir: string;
  call(
    method: string,
    url: string,
    opts?: { token?: string; body?: unknown; ip?: string; headers?: Record<string, string> },
  ): Promise<LightMyRequestResponse>;
  join(name: string, ip?: string): Promise<{ token: string; pin: string; id: string }>;
  adminToken(): Promise<string>;
  /** Join and promote to host through the admin. */
  host(name: string): Promise<{ token: string; id: string }>;
  close(): Promise<void>;
}

/** A fresh gallery on a fresh database (SQLite or PostgreSQL per TEST_BACKEND) with a FakeClock. */
export async function startGallery(
  opts: {
    env?: Record<string, string>;
    deps?: Partial<AppDeps>;
    keepEnv?: Awaited<ReturnType<typeof createTestEnv>>;
  } = {},
): Promise<Gallery> {
  const env = opts.keepEnv ?? (await createTestEnv("gallery_core"));
  const clock = new FakeClock();
  const logs = captureLogger();
  const config = loadEnv(envSpec, {
    DATA_DIR: env.dataDir,
    DATABASE_URL: env.databaseUrl,
    GALLERY_ADMIN_PASSWORD: ADMIN_PASSWORD,
    ...opts.env,
  });
  const built = await buildApp(config, {
    logger: logs.logger,
    clock,
    disk: { stat: async () => ({ free_bytes: 50e9, total_bytes: 100e9 }) },
    ...opts.deps,
  });
  let ipCounter = 0;
  const g: Gallery = {
    built,
    clock,
    logs,
    dataDir: env.dataDir,
    call(method, url, o = {}) {
      const headers: Record<string, string> = { ...o.headers };
      if (o.token) headers.authorization = `Bearer ${o.token}`;
      // Every caller gets its own IP unless a test pins one, so limits do not leak across tests.
      headers["x-forwarded-for"] = o.ip ?? `10.0.${Math.floor(++ipCounter / 250)}.${ipCounter % 250}`;
      return built.app.inject({
        method: method as "GET",
        url: `/api/v1${url}`,
        headers,
        ...(o.body !== undefined ? { payload: o.body as object } : {}),
      });
    },
    async join(name, ip) {
      const res = await g.call("POST", "/join", { body: { name }, ...(ip ? { ip } : {}) });
      if (res.statusCode !== 201) throw new Error(`join ${name}: ${res.statusCode} ${res.body}`);
      const b = res.json();
      return { token: b.token, pin: b.pin, id: b.user.id };
    },
    async adminToken() {
      const res = await g.call("POST", "/admin/login", { body: { password: ADMIN_PASSWORD } });
      if (res.statusCode !== 200) throw new Error(`admin login: ${res.statusCode} ${res.body}`);
      return res.json().token;
    },
    async host(name) {
      const u = await g.join(name);
      const res = await g.call("POST", `/host/users/${u.id}/promote`, { token: await g.adminToken() });
      if (res.statusCode !== 200) throw new Error(`promote: ${res.statusCode} ${res.body}`);
      return u;
    },
    async close() {
      await built.app.close();
      await built.close();
      if (!opts.keepEnv) await env.cleanup();
    },
  };
  return g;
}
