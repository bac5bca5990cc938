// Targets of bench/platform-async, each run by the harness in its own process. Both publish jobs
// from inside their own process (as a script's pubsub.publishDurable does inside the platform)
// and record when each ran; commands: `burst` (N jobs from PUBLISHERS concurrent publishers),
// `single` (jobs one at a time, each once the previous one ran), then `figures`.
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadEnv } from "@app/kit/config";
import { createLogger } from "@app/kit/logger";
import { buildApp, envSpec } from "@app/script-platform";
import { pubsubOps } from "@app/script-platform/bench";
import PgBoss from "pg-boss";
import { percentile, type ServerTarget } from "../harness/index.js";
import { profileCommands } from "../platform/profiling.js";

export const PUBLISHERS = 8;
const ADMIN = { username: "bench", password: "bench password 1" };
const SINK = `export default async function (ctx) { log.info(String(ctx.event.pubsub.message.i)); return null; }`;

export interface Figures {
  jobs: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** Mean time inside the sandbox per run (platform only). */
  runMs?: number;
}

function figures(sentAt: number[], doneAt: number[]): Figures {
  const lat = doneAt.map((d, i) => d - (sentAt[i] ?? d)).sort((a, b) => a - b);
  const seconds = (Math.max(...doneAt) - Math.min(...sentAt)) / 1000;
  return {
    jobs: doneAt.length,
    seconds,
    perSecond: doneAt.length / seconds,
    p50: percentile(lat, 50),
    p99: percentile(lat, 99),
  };
}

/** Run `count` jobs from `first` on with PUBLISHERS concurrent senders, recording send times. */
async function sendAll(first: number, count: number, sentAt: number[], send: (i: number) => Promise<void>) {
  let next = first;
  await Promise.all(
    Array.from({ length: PUBLISHERS }, async () => {
      for (;;) {
        const i = next++;
        if (i >= first + count) return;
        sentAt[i] = Date.now();
        await send(i);
      }
    }),
  );
}

/** The job-running commands both targets share, given how to publish and how to await job i. */
function jobCommands(
  publish: (i: number) => Promise<void>,
  ran: (i: number) => Promise<void>,
  done: () => number[],
) {
  const sentAt: number[] = [];
  let n = 0;
  let burstN = 0;
  /** Every burst's job range, for per-burst figures (interleaved rounds in bench/platform). */
  const bursts: { first: number; count: number }[] = [];
  return {
    burst: async (count: unknown) => {
      burstN = Number(count);
      bursts.push({ first: n, count: burstN });
      const all = Promise.all(Array.from({ length: burstN }, (_, k) => ran(n + k)));
      await sendAll(n, burstN, sentAt, publish);
      await all;
      n += burstN;
      return null;
    },
    /** Figures of each burst so far (needs `done()` filled, e.g. by the platform's `figures`). */
    bursts: () =>
      bursts.map((b) =>
        figures(sentAt.slice(b.first, b.first + b.count), done().slice(b.first, b.first + b.count)),
      ),
    single: async (count: unknown) => {
      for (let k = 0; k < Number(count); k++) {
        const finished = ran(n);
        sentAt[n] = Date.now();
        await publish(n);
        await finished;
        n++;
      }
      return null;
    },
    figures: async () => {
      const doneAt = done();
      return {
        burst: figures(sentAt.slice(0, burstN), doneAt.slice(0, burstN)),
        single: figures(sentAt.slice(burstN, n), doneAt.slice(burstN, n)),
      };
    },
  };
}

export async function startPlatformAsync(args: {
  databaseUrl?: string;
  noLocalRuns?: boolean;
}): Promise<ServerTarget> {
  const dataDir = mkdtempSync(join(tmpdir(), "bench-platform-async-"));
  const config = loadEnv(envSpec, {
    DATA_DIR: dataDir,
    DATABASE_URL: args.databaseUrl,
    PLATFORM_ADMIN_USERNAME: ADMIN.username,
    PLATFORM_ADMIN_PASSWORD: ADMIN.password,
    PLATFORM_SECRET_KEY: randomBytes(32).toString("hex"),
    // An experiment knob (unset: the default): with slots for every run none spills to the claim path.
    PLATFORM_MAX_CONCURRENCY: process.env.BENCH_MAX_CONCURRENCY,
    LOG_LEVEL: "warn",
  });
  const built = await buildApp(config, { logger: createLogger({ name: "bench", level: "warn" }) });
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
  const runtime = built.engine.runtime;
  // A/B of the local-runs shortcut (bench/platform BENCH_LOCAL_AB): this process never has a slot
  // for a run as it is written, so every run is announced, claimed and its script read, as before it.
  if (args.noLocalRuns) runtime.dispatcher.local.reserve = () => 0;
  const pubsub = pubsubOps(runtime.sdk, {
    appId: app.id,
    scriptId: script.id,
    executionId: "bench",
    principal: null,
    depth: 0,
  });
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
  // Runs are awaited by polling the executions table (every 20-200 ms), as a client of the platform would.
  let target = 0;
  let waiting: Promise<void> | undefined;
  const ran = (i: number) => {
    target = Math.max(target, i + 1);
    waiting ??= (async () => {
      const deadline = Date.now() + 120_000;
      for (let finished = await finishedRuns(); finished < target; finished = await finishedRuns()) {
        if (Date.now() > deadline) throw new Error(`runs stalled below ${target}`);
        // Far from done, look again later: every poll is a count the bench adds to the server's
        // work on both backends (25-50 per burst at a fixed 20 ms). Figures come from the
        // records' finish times, not from when a poll saw them.
        await new Promise((r) => setTimeout(r, Math.min(200, Math.max(20, (target - finished) / 4))));
      }
      waiting = undefined;
    })();
    return waiting;
  };
  const doneAt: number[] = [];
  let runMs = 0;
  const cmds = jobCommands(
    async (i) => {
      // Nothing else: the outbox writer announces the rows itself (NOTIFY at commit on
      // PostgreSQL, a direct wake-up on SQLite), as it does for a script's publishDurable.
      await pubsub.publishDurable("bench", { i });
    },
    ran,
    () => doneAt,
  );
  return {
    url: "",
    commands: {
      ...profileCommands(),
      burst: cmds.burst,
      single: cmds.single,
      figures: async () => {
        await fillDone();
        const f = await cmds.figures();
        return { ...f, burst: { ...f.burst, runMs } };
      },
      /** Figures of every burst so far, in order (runs/s, p50, p99 each). */
      bursts: async () => {
        await fillDone();
        return cmds.bursts();
      },
    },
    close: async () => {
      await built.app.close();
      await built.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  /** doneAt of every recorded run, from its execution record; fails on a failed run. */
  async function fillDone() {
    const rows = await db
      .selectFrom("executions")
      .select(["logs", "finished_at", "status", "duration_ms"])
      .where("script_id", "=", script.id)
      .execute();
    let failed = 0;
    for (const r of rows) {
      if (r.status !== "succeeded") failed++;
      const logs = JSON.parse(r.logs) as { message: string }[];
      doneAt[Number(logs[0]?.message)] = Date.parse(String(r.finished_at));
    }
    if (failed > 0) throw new Error(`${failed} runs failed`);
    runMs = rows.reduce((sum, r) => sum + Number(r.duration_ms ?? 0), 0) / rows.length;
  }
}

export async function startPgBoss(args: { databaseUrl: string }): Promise<ServerTarget> {
  const boss = new PgBoss({ connectionString: args.databaseUrl, schema: "pgboss_bench" });
  boss.on("error", () => {});
  await boss.start();
  await boss.createQueue("bench");
  const doneAt: number[] = [];
  const waiting = new Map<number, () => void>();
  await boss.work<{ i: number }>("bench", { batchSize: 32, pollingIntervalSeconds: 0.5 }, async (jobs) => {
    for (const job of jobs) {
      doneAt[job.data.i] = Date.now();
      waiting.get(job.data.i)?.();
    }
  });
  const cmds = jobCommands(
    async (i) => {
      await boss.send("bench", { i });
    },
    (i) => new Promise<void>((r) => waiting.set(i, r)),
    () => doneAt,
  );
  return {
    url: "",
    commands: cmds,
    close: () => boss.stop({ graceful: false, wait: true }),
  };
}
