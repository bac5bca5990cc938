import { hostname } from "node:os";
import { toIso } from "@app/kit/clock";
import { unavailable } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { PlatformContext, ServiceProvider, WorkerFactory } from "../context.js";
import type { Principal } from "../control/scopes.js";
import type { ScriptRecord } from "../control/scripts-repo.js";
import { createDispatcher, type Dispatcher } from "../dispatch/dispatcher.js";
import { Inbox } from "../dispatch/inbox.js";
import { encodeHttpPayload, type OutboxRow } from "../dispatch/outbox.js";
import { Engine } from "../sandbox/engine.js";
import { DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS } from "../sandbox/limits.js";
import { ModuleResolver } from "../sandbox/module-loader.js";
import { createOutboundHttp, type OutboundHttp } from "../sdk/http.js";
import type { SdkDeps } from "../sdk/types.js";
import { principalToJson } from "../triggers/principal.js";
import { executionsRepo } from "./executions-repo.js";
import { createExecutor, type Executor, type JobOutcome, type RequestView } from "./executor.js";

/** Default bound of waiting async HTTP requests per app (see Runtime.limits). */
export const MAX_PENDING_ASYNC_PER_APP = 10_000;

/** Extra wait for a sync result beyond the script's own timeout (seed: timeout plus 2 s). */
export const SYNC_GRACE_MS = 2000;

export interface Runtime {
  engine: Engine;
  modules: ModuleResolver;
  http: OutboundHttp;
  sdk: SdkDeps;
  executor: Executor;
  inbox: Inbox;
  dispatcher: Dispatcher;
  /**
   * Bound of the async HTTP queue: at most this many async requests of one app wait in the
   * outbox; beyond it an async request gets 503 `queue_full` (the outbox is a queue too).
   */
  limits: { maxPendingAsyncPerApp: number };
  /** Run a script for an HTTP request: sync waits for the outcome, async answers at once. */
  invoke(input: InvokeInput): Promise<InvokeResult>;
}

export interface InvokeInput {
  appId: string;
  scriptId: string;
  /** The script as loaded for this request (saves the dispatcher a read). */
  script?: ScriptRecord;
  timeoutSeconds: number | null;
  mode: "sync" | "async";
  request: RequestView;
  requestId: string;
  principal: Principal | null;
}

export type InvokeResult =
  | { kind: "accepted"; execution_id: string; accepted_at: string }
  | { kind: "done"; execution_id: string; outcome: JobOutcome };

declare module "../context.js" {
  interface PlatformServices {
    runtime: Runtime;
  }
}

export function createRuntime(ctx: PlatformContext): Runtime {
  const { clock, logger, database, config } = ctx;
  const engine = new Engine({ clock, logger });
  const modules = new ModuleResolver(ctx.scripts, config.PLATFORM_MODULE_CACHE_SIZE);
  const http = createOutboundHttp({ allowPrivate: config.PLATFORM_HTTP_ALLOW_PRIVATE });
  const instanceId = `${hostname().replace(/[^A-Za-z0-9.-]/g, "_")}-${process.pid}-${newId().slice(-12)}`;
  const inbox = new Inbox(instanceId, config.PLATFORM_MAX_CONCURRENCY);
  let dispatcher: Dispatcher | null = null;
  const sdk: SdkDeps = {
    database,
    clock,
    logger,
    secretBox: ctx.secretBox,
    filesRoot: ctx.paths.filesRoot,
    secretMaxBytes: config.PLATFORM_SECRET_MAX_VALUE_BYTES,
    http,
    onEnqueued: () => dispatcher?.enqueued(),
  };
  const executor = createExecutor({
    clock,
    scripts: ctx.scripts,
    sandbox: ctx.sandbox,
    engine,
    modules,
    sdk,
  });
  dispatcher = createDispatcher({
    database,
    clock,
    logger,
    executor,
    inbox,
    instanceId,
    maxConcurrency: config.PLATFORM_MAX_CONCURRENCY,
  });
  const d = dispatcher;
  const limits = { maxPendingAsyncPerApp: MAX_PENDING_ASYNC_PER_APP };

  const invoke = async (input: InvokeInput): Promise<InvokeResult> => {
    const executionId = newId();
    const now = clock.iso();
    const row: OutboxRow = {
      id: newId(),
      app_id: input.appId,
      source_kind: "http",
      trigger_id: null,
      script_id: input.scriptId,
      execution_id: executionId,
      payload: JSON.stringify(encodeHttpPayload(input.request, input.requestId)),
      due_at: now,
      attempts: 0,
      depth: 0,
      principal: input.principal ? JSON.stringify(principalToJson(input.principal)) : null,
      reply_to: null,
      claimed_by: null,
      lease_until: null,
      created_at: now,
    };
    if (input.mode === "async") {
      const waiting = await database.db
        .selectFrom("outbox")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("app_id", "=", input.appId)
        .where("source_kind", "=", "http")
        .where("reply_to", "is", null)
        .executeTakeFirst();
      if (Number(waiting?.n ?? 0) >= limits.maxPendingAsyncPerApp)
        throw unavailable(
          5,
          "Too many async requests are waiting for this app; try again later.",
          "queue_full",
        );
      await d.submit(row);
      return { kind: "accepted", execution_id: executionId, accepted_at: now };
    }
    const waiter = inbox.register();
    if (!waiter) throw unavailable(1, "Too many scripts are running; try again shortly.", "busy");
    try {
      await d.submitOwn({ ...row, reply_to: waiter.replyTo }, input.script);
    } catch (err) {
      waiter.drop();
      throw err;
    }
    const timeoutS = Math.min(input.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS);
    let timer: { cancel(): void } | null = null;
    const expired = new Promise<null>((resolve) => {
      timer = clock.setTimeout(() => resolve(null), timeoutS * 1000 + SYNC_GRACE_MS);
    });
    const outcome = await Promise.race([waiter.result, expired]);
    (timer as { cancel(): void } | null)?.cancel();
    if (outcome === null) {
      // The inbox is dropped: a late result is recorded as an abandoned execution.
      waiter.drop();
      return {
        kind: "done",
        execution_id: executionId,
        outcome: { ok: false, kind: "timeout", message: "No result within the script's time limit." },
      };
    }
    return { kind: "done", execution_id: executionId, outcome };
  };

  return { engine, modules, http, sdk, executor, inbox, dispatcher: d, limits, invoke };
}

/** Provider: builds the runtime into ctx.services.runtime. */
export const runtimeProvider: ServiceProvider = (ctx) => {
  ctx.services.runtime = createRuntime(ctx);
};

/** How long the executions log keeps an entry (the log is bounded by age). */
export const EXECUTION_LOG_RETENTION_MS = 7 * 24 * 3600 * 1000;
const PRUNE_EVERY_MS = 3600 * 1000;

/** Worker: the outbox dispatcher, the executions-log pruning, and the outbound HTTP agent's shutdown. */
export const dispatcherWorker: WorkerFactory = (ctx) => {
  const repo = executionsRepo(ctx.database);
  let timer: { cancel(): void } | null = null;
  const prune = () =>
    repo
      .prune(toIso(ctx.clock.now() - EXECUTION_LOG_RETENTION_MS))
      .catch((err) => ctx.logger.warn({ err }, "pruning the executions log failed"));
  return {
    name: "dispatcher",
    async start() {
      await ctx.services.runtime.dispatcher.start();
      await prune();
      timer = ctx.clock.setInterval(() => void prune(), PRUNE_EVERY_MS);
    },
    async stop() {
      timer?.cancel();
      await ctx.services.runtime.dispatcher.stop();
      await ctx.services.runtime.http.close();
    },
  };
};
