// The parts a sync script request cannot do without, alone and together, each as a server in its
// own process (bench/harness): what the hello route would cost if the platform's own glue (host →
// app → route lookup, ctx building, limits, the inbox, the execution record's building) were free.
// Layers, cumulative from the kit's HTTP app:
//   kit     kit's createHttpApp (request ids, error shape, zod compilers) + its metrics hooks
//   worker  + one message to a worker thread and one back per request (the sandbox boundary,
//           without QuickJS: the worker parses the ctx text and answers fixed JSON)
//   writes  + the seed's durable sync path, written with the platform's own repositories and
//           group commit on its own schema: the outbox row with reply_to, awaited until durable;
//           after the answer the settle (the execution record in, the outbox row out), as the
//           platform's dispatcher does
//   all     worker + writes
import type { AddressInfo } from "node:net";
import { Worker } from "node:worker_threads";
import { systemClock } from "@app/kit/clock";
import { openDatabase } from "@app/kit/db";
import { createTestEnv } from "@app/kit/db/testing";
import { createHttpApp } from "@app/kit/http";
import { registerMetrics } from "@app/kit/http/metrics";
import { newId } from "@app/kit/ids";
import { createLogger } from "@app/kit/logger";
import {
  appsRepo,
  createGroupCommit,
  executionsRepo,
  migrations,
  type OutboxRow,
  outboxRepo,
  type PlatformDB,
  scriptsRepo,
} from "@app/script-platform/bench";
import type { ServerTarget } from "../harness/index.js";
import { threadCpu } from "../platform/target.js";

export type Layer = "kit" | "worker" | "writes" | "all";

const BODY = JSON.stringify({ hello: "world" });

// The worker answers each message with the fixed result, after parsing the ctx as a run would.
const WORKER_SOURCE = `
const { parentPort } = require("node:worker_threads");
parentPort.on("message", (m) => {
  const ctx = JSON.parse(m.ctx);
  parentPort.postMessage({ id: m.id, ok: ctx.request.method === "GET", value: ${JSON.stringify(BODY)} });
});
`;

/** Two workers (the platform's default on 2 cores), requests dealt in turn. */
function workerPair() {
  const workers = [0, 1].map(() => new Worker(WORKER_SOURCE, { eval: true }));
  const waiting = new Map<number, (value: string) => void>();
  for (const w of workers)
    w.on("message", (m: { id: number; value: string }) => {
      waiting.get(m.id)?.(m.value);
      waiting.delete(m.id);
    });
  let next = 0;
  return {
    run(ctx: string): Promise<string> {
      const id = next++;
      return new Promise((resolve) => {
        waiting.set(id, resolve);
        workers[id % workers.length]?.postMessage({ id, ctx });
      });
    },
    close: () => Promise.all(workers.map((w) => w.terminate())),
  };
}

export async function startFloor(args: { layer: Layer }): Promise<ServerTarget> {
  const { layer } = args;
  const env = await createTestEnv("bench_floor");
  const logger = createLogger({ name: "bench", level: "error" });
  const database = openDatabase<PlatformDB>({
    url: env.databaseUrl,
    sqliteFile: `${env.dataDir}/platform.sqlite`,
    planCacheMode: "auto",
    logger,
  });
  await database.migrate(migrations);
  const outbox = outboxRepo(database, systemClock);
  const executions = executionsRepo(database);
  const commits = createGroupCommit({ database });
  const workers = layer === "worker" || layer === "all" ? workerPair() : null;
  const writes = layer === "writes" || layer === "all";
  // The rows reference an app and a script (foreign keys): one of each, as the platform has.
  const appId = newId();
  const scriptId = newId();
  const now = systemClock.iso();
  await appsRepo(database).insert(database.db, {
    id: appId,
    slug: "bench",
    name: "bench",
    description: "",
    created_at: now,
    updated_at: now,
  });
  await scriptsRepo(database).insert(database.db, {
    id: scriptId,
    app_id: appId,
    name: "hello",
    kind: "endpoint",
    source: `export default () => ({ hello: "world" })`,
    description: "",
    timeout_seconds: 5,
    sandbox: {},
    memory_limit_mb: null,
    created_at: now,
    updated_at: now,
    language: "javascript",
    authored_source: null,
    version: 1,
  });

  const app = createHttpApp({ logger });
  registerMetrics(app);
  app.get("/hello", async (req, reply) => {
    const executionId = newId();
    const started = systemClock.now();
    const at = systemClock.iso();
    const request = {
      method: req.method,
      path: req.url,
      headers: req.headers,
      params: {},
      query: {},
      rest: "",
    };
    const requestJson = JSON.stringify(request);
    const row: OutboxRow = {
      id: newId(),
      app_id: appId,
      source_kind: "http",
      trigger_id: null,
      script_id: scriptId,
      execution_id: executionId,
      payload: `{"request":${requestJson},"request_id":${JSON.stringify(req.id)}}`,
      due_at: at,
      attempts: 0,
      depth: 0,
      principal: null,
      reply_to: `bench:${executionId}`,
      claimed_by: null,
      lease_until: null,
      created_at: at,
    };
    if (writes) await commits.write(outbox.insertWrite(row));
    const body = workers ? await workers.run(`{"request":${requestJson}}`) : BODY;
    // As the platform does: the answer goes out first, the row settles in the next group commit.
    if (writes)
      void commits
        .write(
          executions.settleWrite(
            {
              id: executionId,
              app_id: appId,
              script_id: scriptId,
              invocation_type: "http",
              status: "succeeded",
              duration_ms: systemClock.now() - started,
              logs: [],
              error: null,
              instance_id: "bench",
              created_at: at,
              finished_at: systemClock.iso(),
            },
            row.id,
          ),
        )
        .catch(() => {});
    reply.header("x-execution-id", executionId);
    return reply.type("application/json; charset=utf-8").send(body);
  });
  await app.listen({ port: 0, host: "127.0.0.1" });
  return {
    url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`,
    info: { layer, workers: workers ? 2 : 0 },
    commands: { threads: async () => threadCpu() },
    close: async () => {
      await app.close();
      await workers?.close();
      await database.close();
      await env.cleanup();
    },
  };
}
