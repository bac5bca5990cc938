// Trigger executions per second end to end (publishDurable → triggered script ran) on SQLite and,
// when DATABASE_URL is set, on PostgreSQL, with p50/p99 latency; then the same job count through
// pg-boss on the same PostgreSQL server for comparison. BENCH_N overrides the job count.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadEnv } from "@app/kit/config";
import { createLogger } from "@app/kit/logger";
import pg from "pg";
import PgBoss from "pg-boss";
import { buildApp } from "../../services/script-platform/src/app.js";
import { envSpec } from "../../services/script-platform/src/config.js";
import { pubsubOps } from "../../services/script-platform/src/sdk/pubsub.js";

const N = Number(process.env.BENCH_N ?? 600);
const PUBLISHERS = 8;
/** Jobs sent one at a time after the burst (unloaded latency). */
const SINGLE = 30;
const ADMIN = { username: "bench", password: "bench password 1" };
const SINK = `export default async function (ctx) { log.info(String(ctx.event.pubsub.message.i)); return null; }`;

interface Figures {
  label: string;
  jobs: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Mean time inside the sandbox per run (platform only). */
  runMs?: number;
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

function figures(label: string, sentAt: number[], doneAt: number[]): Figures {
  const lat = doneAt.map((d, i) => d - (sentAt[i] ?? d)).sort((a, b) => a - b);
  const seconds = (Math.max(...doneAt) - Math.min(...sentAt)) / 1000;
  return {
    label,
    jobs: doneAt.length,
    seconds,
    perSecond: doneAt.length / seconds,
    p50: pct(lat, 50),
    p99: pct(lat, 99),
  };
}

/** Run `count` jobs through `send` with PUBLISHERS concurrent senders; returns the send times. */
async function sendAll(count: number, send: (i: number) => Promise<void>): Promise<number[]> {
  const sentAt: number[] = new Array(count);
  let next = 0;
  await Promise.all(
    Array.from({ length: PUBLISHERS }, async () => {
      for (;;) {
        const i = next++;
        if (i >= count) return;
        sentAt[i] = Date.now();
        await send(i);
      }
    }),
  );
  return sentAt;
}

async function platform(
  label: string,
  databaseUrl: string | undefined,
): Promise<{ burst: Figures; single: Figures }> {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-platform-async-"));
  const config = loadEnv(envSpec, {
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    PLATFORM_ADMIN_USERNAME: ADMIN.username,
    PLATFORM_ADMIN_PASSWORD: ADMIN.password,
    PLATFORM_SECRET_KEY: randomBytes(32).toString("hex"),
    LOG_LEVEL: "warn",
  });
  const built = await buildApp(config, { logger: createLogger({ name: "bench", level: "warn" }) });
  try {
    const call = async (method: string, url: string, body?: unknown, token?: string) => {
      const res = await built.app.inject({
        method: method as "POST",
        url,
        headers: token ? { authorization: `Bearer ${token}` } : {},
        ...(body !== undefined ? { payload: body as object } : {}),
      });
      if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
      return res.json();
    };
    const { token } = await call("POST", "/api/v1/admin/login", ADMIN);
    const app = await call("POST", "/api/v1/admin/apps", { slug: "bench" }, token);
    const script = await call(
      "POST",
      "/api/v1/admin/scripts",
      { app_id: app.id, name: "sink", kind: "endpoint", source: SINK },
      token,
    );
    await call(
      "POST",
      `/api/v1/admin/apps/${app.id}/triggers/pubsub`,
      { script_id: script.id, topic: "bench" },
      token,
    );

    // The SDK's own publishDurable (what a script's pubsub.publishDurable runs), minus the sandbox call.
    const runtime = built.ctx.services.runtime;
    const pubsub = pubsubOps(runtime.sdk, {
      appId: app.id,
      scriptId: script.id,
      executionId: "bench",
      principal: null,
      depth: 0,
    });
    const publish = async (i: number) => {
      await pubsub.publishDurable("bench", { i });
      runtime.sdk.onEnqueued?.();
    };
    const db = built.ctx.database.db;
    const finishedRuns = async () =>
      Number(
        (
          await db
            .selectFrom("executions")
            .select((eb) => eb.fn.countAll<number>().as("n"))
            .where("script_id", "=", script.id)
            .executeTakeFirst()
        )?.n,
      );
    const waitFor = async (count: number, pollMs: number) => {
      const deadline = Date.now() + 120_000;
      while ((await finishedRuns()) < count) {
        if (Date.now() > deadline) throw new Error(`runs stalled below ${count}`);
        await new Promise((r) => setTimeout(r, pollMs));
      }
    };

    // Burst: N jobs published as fast as the publishers go; latency includes the queueing.
    const sentAt = await sendAll(N, publish);
    await waitFor(N, 20);
    // Unloaded: one job at a time, each published once the previous one has run.
    for (let k = 0; k < SINGLE; k++) {
      sentAt[N + k] = Date.now();
      await publish(N + k);
      await waitFor(N + k + 1, 1);
    }

    const rows = await db
      .selectFrom("executions")
      .select(["logs", "finished_at", "status", "duration_ms"])
      .where("script_id", "=", script.id)
      .execute();
    const doneAt: number[] = new Array(N + SINGLE);
    let failed = 0;
    for (const r of rows) {
      if (r.status !== "succeeded") failed++;
      const logs = JSON.parse(r.logs) as { message: string }[];
      const i = Number(logs[0]?.message);
      doneAt[i] = Date.parse(String(r.finished_at));
    }
    if (failed > 0) throw new Error(`${failed} runs failed`);
    const runMs = rows.reduce((sum, r) => sum + Number(r.duration_ms ?? 0), 0) / rows.length;
    return {
      burst: { ...figures(label, sentAt.slice(0, N), doneAt.slice(0, N)), runMs },
      single: figures(`${label}, one at a time`, sentAt.slice(N), doneAt.slice(N)),
    };
  } finally {
    await built.app.close();
    await built.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function pgBoss(url: string): Promise<{ burst: Figures; single: Figures }> {
  const boss = new PgBoss({ connectionString: url, schema: "pgboss_bench" });
  boss.on("error", () => {});
  await boss.start();
  try {
    await boss.createQueue("bench");
    const doneAt: number[] = new Array(N + SINGLE);
    const waiting = new Map<number, () => void>();
    await boss.work<{ i: number }>("bench", { batchSize: 32, pollingIntervalSeconds: 0.5 }, async (jobs) => {
      for (const job of jobs) {
        doneAt[job.data.i] = Date.now();
        waiting.get(job.data.i)?.();
      }
    });
    const ran = (i: number) => new Promise<void>((r) => waiting.set(i, r));
    const burstDone = Promise.all(Array.from({ length: N }, (_, i) => ran(i)));
    const sentAt = await sendAll(N, async (i) => {
      await boss.send("bench", { i });
    });
    await burstDone;
    for (let k = 0; k < SINGLE; k++) {
      const done = ran(N + k);
      sentAt[N + k] = Date.now();
      await boss.send("bench", { i: N + k });
      await done;
    }
    return {
      burst: figures("pg-boss (same PostgreSQL)", sentAt.slice(0, N), doneAt.slice(0, N)),
      single: figures("pg-boss, one at a time", sentAt.slice(N), doneAt.slice(N)),
    };
  } finally {
    await boss.stop({ graceful: false, wait: true });
  }
}

async function withDatabase<T>(adminUrl: string, fn: (url: string) => Promise<T>): Promise<T> {
  const name = `bench_async_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  try {
    return await fn(u.toString());
  } finally {
    const again = new pg.Client({ connectionString: adminUrl });
    await again.connect();
    await again.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await again.end();
  }
}

const print = (f: Figures) =>
  console.log(
    `${f.label.padEnd(40)} ${String(f.jobs).padStart(5)} jobs in ${f.seconds.toFixed(2).padStart(6)} s  ` +
      `${f.perSecond.toFixed(0).padStart(5)} runs/s  p50 ${f.p50.toFixed(0).padStart(5)} ms  p99 ${f.p99.toFixed(0).padStart(5)} ms` +
      (f.runMs !== undefined ? `  (mean ${f.runMs.toFixed(1)} ms in the sandbox per run)` : ""),
  );

console.log(
  `platform-async: ${N} publishDurable → triggered script runs (${PUBLISHERS} concurrent publishers), then ${SINGLE} one at a time`,
);
const sqlite = await platform("platform on SQLite", undefined);
print(sqlite.burst);
print(sqlite.single);
const adminUrl = process.env.DATABASE_URL;
if (adminUrl) {
  const [ours, boss] = await withDatabase(
    adminUrl,
    async (url) => [await platform("platform on PostgreSQL", url), await pgBoss(url)] as const,
  );
  for (const f of [ours.burst, ours.single, boss.burst, boss.single]) print(f);
  console.log(
    `platform/pg-boss on PostgreSQL: burst throughput ${(ours.burst.perSecond / boss.burst.perSecond).toFixed(2)}x, ` +
      `unloaded p50 latency ${(ours.single.p50 / Math.max(1, boss.single.p50)).toFixed(2)}x`,
  );
} else {
  console.log("DATABASE_URL unset: PostgreSQL and pg-boss figures skipped");
}
