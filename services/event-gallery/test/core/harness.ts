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
    // Callers stand for distinct clients through X-Forwarded-For from the local "proxy".
    TRUST_PROXY: "1",
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

/** Insert an upload row directly (the upload pipeline is tested elsewhere). */
export async function seedUpload(g: Gallery, userId: string, opts: { size?: number } = {}): Promise<string> {
  const { newId } = await import("@app/kit/ids");
  const id = newId();
  const now = g.clock.iso();
  await g.built.ctx.database.db
    .insertInto("uploads")
    .values({
      id,
      user_id: userId,
      client_upload_id: null,
      media_type: "image",
      mime_type: "image/jpeg",
      original_path: `originals/${id}.jpg`,
      preview_path: null,
      display_path: null,
      thumbnail_path: null,
      original_size_bytes: opts.size ?? 1000,
      width: 10,
      height: 10,
      duration_s: null,
      derivative_last_error: null,
      deleted_at: null,
      deleted_by: null,
      media_reclaimed_at: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return id;
}

export async function release(g: Gallery): Promise<void> {
  await g.built.ctx.database.db
    .updateTable("event")
    .set({ export_released_at: g.clock.iso(), uploads_locked_at: g.clock.iso() })
    .where("id", "=", 1)
    .execute();
}

export async function epoch(g: Gallery): Promise<number> {
  const row = await g.built.ctx.database.db
    .selectFrom("event")
    .select("export_epoch")
    .executeTakeFirstOrThrow();
  return row.export_epoch;
}

/** Collects every bus event published while the test runs. */
export function recordEvents(g: Gallery) {
  const seen: { event: string; data: Record<string, unknown>; hostsOnly: boolean }[] = [];
  const stop = g.built.ctx.bus.subscribe((event, data, hostsOnly) => seen.push({ event, data, hostsOnly }));
  return { seen, stop, names: () => seen.map((e) => e.event) };
}

/** A /feed/delta answer as the paging tests read it. */
export interface DeltaPage {
  changes: { id: string; like_count: number }[];
  unhidden_user_ids: string[];
  cursor: string;
  has_more: boolean;
}

/**
 * Every /feed/delta page from `cursor` on, `limit` changes at a time, until `has_more` is false.
 * Throws on a non-200 answer or when it takes more than `maxPages` (a cursor that never ends).
 */
export async function deltaPages(
  g: Gallery,
  token: string,
  cursor: string,
  limit: number,
  maxPages = 9,
): Promise<DeltaPage[]> {
  const pages: DeltaPage[] = [];
  for (let at = cursor; ; ) {
    const res = await g.call("GET", `/feed/delta?limit=${limit}&cursor=${encodeURIComponent(at)}`, { token });
    if (res.statusCode !== 200) throw new Error(`delta answered ${res.statusCode}: ${res.body}`);
    const page = res.json() as DeltaPage;
    pages.push(page);
    if (!page.has_more) return pages;
    if (pages.length >= maxPages) throw new Error(`delta still has_more after ${maxPages} pages`);
    at = page.cursor;
  }
}
