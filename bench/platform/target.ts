// The script-platform as a bench target, in its own process (bench/harness): SQLite, or
// PostgreSQL with `{backend: "postgres"}` (a fresh database on the server at DATABASE_URL), one
// app on host bench.test, a `save` command that saves an endpoint script and routes GET <path>
// to it, a `hog` command for a second app's scripts, and CPU profiling commands.
import { readdirSync, readFileSync, statSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { systemClock } from "@app/kit/clock";
import { loadEnv } from "@app/kit/config";
import { createTestEnv } from "@app/kit/db/testing";
import { newId } from "@app/kit/ids";
import { createLogger } from "@app/kit/logger";
import { buildApp, envSpec } from "@app/script-platform";
import { type OutboxRow, outboxRepo } from "@app/script-platform/bench";
import type { ServerTarget } from "../harness/index.js";
import { profileCommands } from "./profiling.js";

const HELLO = `export default function (ctx) { return { hello: "world" }; }`;

export async function startPlatform(
  args: { backend?: "sqlite" | "postgres"; env?: Record<string, string> } = {},
): Promise<ServerTarget> {
  // This is the target's own process: the backend choice affects nothing else.
  if (args.backend) process.env.TEST_BACKEND = args.backend;
  const env = await createTestEnv("bench_platform");
  const config = loadEnv(envSpec, {
    DATA_DIR: env.dataDir,
    DATABASE_URL: env.databaseUrl,
    PLATFORM_ADMIN_USERNAME: "bench",
    PLATFORM_ADMIN_PASSWORD: "bench password 1234",
    PLATFORM_MAX_CONCURRENCY: "64",
    // Engine knobs may be tried from the bench's environment (default: the platform's defaults).
    ...Object.fromEntries(
      ["PLATFORM_WORKERS", "PLATFORM_APP_CONCURRENCY", "PLATFORM_SPARE_WORKERS"].flatMap((k) =>
        process.env[k] ? [[k, process.env[k] as string]] : [],
      ),
    ),
    // A step's own settings (e.g. the parked step lets scripts fetch loopback).
    ...args.env,
  });
  const built = await buildApp(config, {
    logger: createLogger({ name: "bench", level: "error" }),
    announce: () => {},
  });
  const { app } = built;
  await app.listen({ port: 0, host: "127.0.0.1" });
  const login = await app.inject({
    method: "POST",
    url: "/api/v1/admin/login",
    payload: { username: "bench", password: "bench password 1234" },
  });
  const token = login.json().token as string;
  const admin = async (method: string, url: string, payload?: unknown) => {
    const res = await app.inject({
      method: method as "POST",
      url,
      headers: { authorization: `Bearer ${token}` },
      ...(payload ? { payload: payload as object } : {}),
    });
    if (res.statusCode >= 300) throw new Error(`${method} ${url}: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const appId = (await admin("POST", "/api/v1/admin/apps", { slug: "bench" })).id as string;
  await admin("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "bench.test" });
  const save = async (arg: unknown) => {
    const { name, path } = arg as { name: string; path: string };
    const s = await admin("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name,
      kind: "endpoint",
      source: HELLO,
    });
    await admin("POST", `/api/v1/admin/scripts/${s.id}/routes`, { path, method: "GET", host_kind: "any" });
    return null;
  };
  // Other apps whose scripts hog their workers (the isolation figures): `app` names the app
  // (slug, served at <slug>.test), default "hogs".
  const hogApps = new Map<string, string>();
  const hog = async (arg: unknown) => {
    const {
      name,
      path,
      source,
      timeout_seconds,
      app = "hogs",
    } = arg as {
      name: string;
      path: string;
      source: string;
      timeout_seconds: number;
      app?: string;
    };
    let hogApp = hogApps.get(app);
    if (!hogApp) {
      hogApp = (await admin("POST", "/api/v1/admin/apps", { slug: app })).id as string;
      await admin("POST", `/api/v1/admin/apps/${hogApp}/domains`, { host: `${app}.test` });
      hogApps.set(app, hogApp);
    }
    const s = await admin("POST", "/api/v1/admin/scripts", {
      app_id: hogApp,
      name,
      kind: "endpoint",
      source,
      timeout_seconds,
    });
    await admin("POST", `/api/v1/admin/scripts/${s.id}/routes`, { path, method: "GET", host_kind: "any" });
    return null;
  };
  // A third app with a pubsub-triggered script, kept busy by a feeder: while it runs, the outbox
  // holds at least `depth` due runs of that script (topped up every 20 ms, as events keep
  // arriving faster than they drain). The mixed figure: the hello route's latency meanwhile.
  let sink: { appId: string; scriptId: string } | null = null;
  let feeder: { timer: NodeJS.Timeout; inserted: number; busy: boolean } | null = null;
  const backlogStart = async (depth: unknown) => {
    if (!sink) {
      const jobsApp = (await admin("POST", "/api/v1/admin/apps", { slug: "jobs" })).id as string;
      const s = await admin("POST", "/api/v1/admin/scripts", {
        app_id: jobsApp,
        name: "sink",
        kind: "endpoint",
        source: `export default function (ctx) { return null; }`,
      });
      sink = { appId: jobsApp, scriptId: s.id as string };
    }
    const { appId: jobsApp, scriptId } = sink;
    const repo = outboxRepo(built.ctx.database, systemClock);
    const rowsOf = (n: number, from: number) => {
      const now = systemClock.iso();
      return Array.from(
        { length: n },
        (_, i): OutboxRow => ({
          id: newId(),
          app_id: jobsApp,
          source_kind: "pubsub",
          trigger_id: null,
          script_id: scriptId,
          execution_id: null,
          payload: JSON.stringify({ event: { pubsub: { topic: "jobs", message: { i: from + i } } } }),
          due_at: now,
          attempts: 0,
          depth: 1,
          principal: null,
          reply_to: null,
          claimed_by: null,
          lease_until: null,
          created_at: now,
        }),
      );
    };
    const f = { timer: undefined as unknown as NodeJS.Timeout, inserted: 0, busy: false };
    const topUp = async () => {
      if (f.busy) return;
      f.busy = true;
      try {
        const r = await built.ctx.database.reader
          .selectFrom("outbox")
          .select((eb) => eb.fn.countAll<number>().as("n"))
          .where("app_id", "=", jobsApp)
          .executeTakeFirst();
        const missing = Number(depth) - Number(r?.n ?? 0);
        for (let k = 0; k < missing; k += 500) {
          const rows = rowsOf(Math.min(500, missing - k), f.inserted);
          await built.ctx.database.writeTx((trx) => repo.insertMany(trx, rows));
          f.inserted += rows.length;
        }
        if (missing > 0) built.engine.runtime.dispatcher.enqueued();
      } finally {
        f.busy = false;
      }
    };
    await topUp();
    f.timer = setInterval(() => void topUp(), 20);
    feeder = f;
    return null;
  };
  /** Stops the feeder; answers how many runs it put in the outbox in all. */
  const backlogStop = async () => {
    if (!feeder) return 0;
    clearInterval(feeder.timer);
    while (feeder.busy) await new Promise((r) => setTimeout(r, 5));
    const n = feeder.inserted;
    feeder = null;
    return n;
  };
  // Finished runs of the backlog; a failed one fails the bench (it would flatter the figure).
  const backlogDone = async () => {
    if (!sink) return 0;
    const rows = await built.ctx.database.reader
      .selectFrom("executions")
      .select(["status", (eb) => eb.fn.countAll<number>().as("n")])
      .where("script_id", "=", sink.scriptId)
      .groupBy("status")
      .execute();
    const bad = rows.filter((r) => r.status !== "succeeded");
    if (bad.length > 0) {
      const e = await built.ctx.database.reader
        .selectFrom("executions")
        .select(["status", "error"])
        .where("script_id", "=", sink.scriptId)
        .where("status", "!=", "succeeded")
        .executeTakeFirst();
      throw new Error(`backlog runs did not succeed: ${JSON.stringify(rows)}; first: ${JSON.stringify(e)}`);
    }
    return rows.reduce((n, r) => n + Number(r.n), 0);
  };
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    info: { backend: env.backend, workers: config.PLATFORM_WORKERS },
    commands: {
      save,
      hog,
      backlogStart,
      backlogStop,
      backlogDone,
      ...profileCommands(),
      // Event-loop utilisation of the main thread since the previous call (1 = never idle).
      elu: (() => {
        let last = performance.eventLoopUtilization();
        return async () => {
          const now = performance.eventLoopUtilization();
          const d = performance.eventLoopUtilization(now, last);
          last = now;
          return d.utilization;
        };
      })(),
      threads: async () => threadCpu(),
      // Group-commit counters of the dispatcher (transactions per request is the figure that
      // matters on SQLite) and kit's WAL syncs and worker checkpoints (zeros on PostgreSQL).
      commitStats: async () => {
        const d = built.ctx.database.durability;
        return {
          ...built.engine.runtime.dispatcher.commitStats,
          syncWaits: d?.sync.waits ?? 0,
          syncs: d?.sync.syncs ?? 0,
          syncMs: d?.sync.syncMs ?? 0,
          checkpoints: d?.checkpoints.checkpoints ?? 0,
          checkpointFrames: d?.checkpoints.frames ?? 0,
          checkpointMs: d?.checkpoints.ms ?? 0,
          checkpointRestarts: d?.checkpoints.restarts ?? 0,
          checkpointWorker: d?.checkpointWorker ?? false,
          walBytes: walBytes(env.dataDir),
        };
      },
    },
    close: async () => {
      await app.close();
      await built.close();
      await env.cleanup();
    },
  };
}

/** Size of the SQLite WAL file (0 without one): the checkpoints must keep it bounded. */
function walBytes(dataDir: string): number {
  try {
    return statSync(`${dataDir}/platform.sqlite-wal`).size;
  } catch {
    return 0;
  }
}

/**
 * CPU seconds per OS thread of this process (/proc/self/task/<tid>/stat, utime + stime). Every
 * thread is named "node": the main thread is the one whose id is the process id; the sandbox
 * workers are told apart by the caller as the busiest others (V8 and libuv helpers use little).
 */
export function threadCpu(): { tid: number; main: boolean; cpuS: number }[] {
  const out: { tid: number; main: boolean; cpuS: number }[] = [];
  for (const tid of readdirSync("/proc/self/task")) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      out.push({
        tid: Number(tid),
        main: Number(tid) === process.pid,
        cpuS: (Number(f[11]) + Number(f[12])) / 100,
      });
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}
