import { hostname } from "node:os";
import { systemClock, toIso } from "@app/kit/clock";
import { unavailable } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import { claimLease, subscriberTokenTtl } from "../config.js";
import type { PlatformContext, Worker } from "../context.js";
import type { Principal } from "../control/scopes.js";
import type { ScriptRecord } from "../control/scripts-repository.js";
import { createDispatcher, type Dispatcher } from "../dispatch/dispatcher.js";
import type { FailurePolicy } from "../dispatch/failure-policy.js";
import { createInbox, type Inbox } from "../dispatch/inbox.js";
import { encodeHttpPayload, type OutboxRow, outboxRepo } from "../dispatch/outbox.js";
import { ScriptVisibleError } from "../sandbox/engine.js";
import {
  DEFAULT_TIMEOUT_SECONDS,
  MAX_TIMEOUT_SECONDS,
  resolveLimits,
  type SandboxKnobs,
} from "../sandbox/limits.js";
import { createModuleResolver, type ModuleResolver } from "../sandbox/module-loader.js";
import { createEnginePool, type EnginePool, PARKED_PER_WORKER } from "../sandbox/pool.js";
import { sdkHost } from "../sdk/host.js";
import { createOutboundHttp, type OutboundHttp } from "../sdk/http.js";
import type { EventSink, SdkDeps } from "../sdk/types.js";
import { principalToJson } from "../triggers/principal.js";
import { SDK_VERSION } from "../version.js";
import { appConcurrency } from "./engine-env.js";
import { executionsRepo, type RunError } from "./executions-repository.js";
import { createExecutor, type Executor, type JobOutcome, type RequestView, runError } from "./executor.js";
import { failureError, toHttpAnswer } from "./response.js";

/** Default bound of waiting async HTTP requests per app (see Runtime.limits). */
export const MAX_PENDING_ASYNC_PER_APP = 10_000;

/** Extra wait for a sync result beyond the script's own timeout (seed: timeout plus 2 s). */
export const SYNC_GRACE_MS = 2000;

/**
 * How long a sync request (or a draft run) waits for a run slot of its app before 503 `busy`
 * (PLATFORM_APP_CONCURRENCY); triggered runs wait in the pool's queue without a bound.
 */
export const SYNC_QUEUE_WAIT_MS = 1000;

/** A draft run's input (contract "Authoring", POST /admin/scripts/{id}:run; see coord notes). */
export interface DraftInput {
  appId: string;
  /** A saved script: its name, sandbox and timeout apply. */
  scriptId?: string | null;
  /** Entry name without a saved script (default "draft"). */
  name?: string;
  /** JavaScript (TypeScript already stripped). */
  source: string;
  sandbox?: Partial<SandboxKnobs> | null;
  timeoutSeconds?: number | null;
  request: {
    method: string;
    path: string;
    query?: Record<string, string> | undefined;
    headers?: Record<string, string> | undefined;
    body?: unknown;
  };
  principal: Principal | null;
  /** Default false: SDK writes emit no trigger events. */
  fireTriggers?: boolean;
}

export interface DraftResult {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  logs: { level: string; message: string; at: string }[];
  duration_ms: number;
  error: RunError | null;
}

export interface Runtime {
  /** The sandbox worker pool every run goes through. */
  engine: EnginePool;
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
  /** Run an unsaved source through the same pool, sandbox, limits and SDK: no outbox row, no record. */
  runDraft(input: DraftInput): Promise<DraftResult>;
  /** Stops the worker pool (after the dispatcher stopped). */
  close(): Promise<void>;
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

/** What the runtime takes from the app besides the context: the dispatch capability's parts. */
export interface RuntimeLinks {
  /** Trigger events of SDK writes (dispatch/change-events.ts). */
  events: EventSink;
  /** Retry / dead letter / drop of failed trigger and async rows (dispatch/failure-policy.ts). */
  failures: FailurePolicy;
}

export async function createRuntime(
  ctx: Pick<
    PlatformContext,
    "clock" | "logger" | "database" | "config" | "scripts" | "secretBox" | "paths" | "sandbox"
  >,
  links: RuntimeLinks,
): Promise<Runtime> {
  const { clock, logger, database, config } = ctx;
  const outbox = outboxRepo(database, clock);
  const engine = await createEnginePool({
    workers: config.PLATFORM_WORKERS,
    appConcurrency: appConcurrency(config),
    appQueue: config.PLATFORM_APP_QUEUE,
    spareWorkers: config.PLATFORM_SPARE_WORKERS,
    blankContexts: config.PLATFORM_BLANK_CONTEXTS,
    sdkCallsInFlight: config.PLATFORM_SDK_CALLS_IN_FLIGHT,
    sdkCallsPerRun: config.PLATFORM_SDK_CALLS_PER_RUN,
    // Real time on purpose: workers measure their deadlines on the wall clock, and the watchdog
    // and the slot wait must agree with them whatever clock the rest of the app is given.
    clock: systemClock,
    logger,
  });
  const modules = createModuleResolver({
    scripts: ctx.scripts,
    cacheSize: config.PLATFORM_MODULE_CACHE_SIZE,
  });
  const http = createOutboundHttp({ allowPrivate: config.PLATFORM_HTTP_ALLOW_PRIVATE });
  const instanceId = `${hostname().replace(/[^A-Za-z0-9.-]/g, "_")}-${process.pid}-${newId().slice(-12)}`;
  // Parked runs hold no dispatcher slot: the sync requests in flight may be that many more.
  const inbox = createInbox({
    instanceId,
    capacity: config.PLATFORM_MAX_CONCURRENCY + config.PLATFORM_WORKERS * PARKED_PER_WORKER,
  });
  let dispatcher: Dispatcher | null = null;
  const sdk: SdkDeps = {
    database,
    clock,
    logger,
    secretBox: ctx.secretBox,
    filesRoot: ctx.paths.filesRoot,
    secretMaxBytes: config.PLATFORM_SECRET_MAX_VALUE_BYTES,
    http,
    tokenTtl: subscriberTokenTtl(config),
    events: links.events,
    // The outbox writer already announced the rows in their transaction (NOTIFY at commit on
    // PostgreSQL reaches every instance): a second NOTIFY per write would only cost a round trip.
    onEnqueued: () => dispatcher?.wake(),
  };
  const executor = createExecutor({
    clock,
    scripts: ctx.scripts,
    sandbox: ctx.sandbox,
    engine,
    modules,
    sdk,
    instanceId,
  });
  dispatcher = createDispatcher({
    database,
    clock,
    logger,
    executor,
    executions: executionsRepo(database),
    failures: links.failures,
    inbox,
    instanceId,
    maxConcurrency: config.PLATFORM_MAX_CONCURRENCY,
    syncWaitMs: SYNC_QUEUE_WAIT_MS,
    ...claimLease(config),
  });
  const d = dispatcher;
  const limits = { maxPendingAsyncPerApp: MAX_PENDING_ASYNC_PER_APP };

  const invoke = async (input: InvokeInput): Promise<InvokeResult> => {
    const executionId = newId();
    const now = clock.iso();
    // The payload's request as JSON text once: the row stores it, and (no bytes in it) the run's
    // ctx carries the same text to the worker. Same text as JSON.stringify of the whole payload.
    const encoded = encodeHttpPayload(input.request, input.requestId);
    const requestJson = JSON.stringify(encoded.request);
    const row: OutboxRow = {
      id: newId(),
      app_id: input.appId,
      source_kind: "http",
      trigger_id: null,
      script_id: input.scriptId,
      execution_id: executionId,
      payload: `{"request":${requestJson},"request_id":${JSON.stringify(encoded.request_id)}}`,
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
      if ((await outbox.waitingAsyncHttp(input.appId)) >= limits.maxPendingAsyncPerApp)
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
    row.reply_to = waiter.replyTo;
    try {
      await d.submitOwn(row, input.script, {
        request: input.request,
        requestId: input.requestId,
        // With bytes the payload spells the body in base64: the ctx needs the bytes themselves.
        requestJson: encoded.request.body_base64 === undefined ? requestJson : null,
      });
    } catch (err) {
      waiter.drop();
      throw err;
    }
    const timeoutS = Math.min(input.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS, MAX_TIMEOUT_SECONDS);
    // On expiry the waiter is dropped and its result is null; a late outcome is recorded as an
    // abandoned execution.
    const timer = clock.setTimeout(() => waiter.expire(), timeoutS * 1000 + SYNC_GRACE_MS);
    const outcome = await waiter.result;
    timer.cancel();
    if (outcome === null) {
      return {
        kind: "done",
        execution_id: executionId,
        outcome: { ok: false, kind: "timeout", message: "No result within the script's time limit." },
      };
    }
    return { kind: "done", execution_id: executionId, outcome };
  };

  const runDraft = async (input: DraftInput): Promise<DraftResult> => {
    const started = clock.now();
    const saved = input.scriptId ? await ctx.scripts.byId(input.scriptId) : null;
    if (input.scriptId && (!saved || saved.app_id !== input.appId))
      throw new ScriptVisibleError("The script does not exist.");
    const name = saved?.name ?? input.name ?? "draft";
    const executionId = `draft-${newId()}`;
    const fail = (
      o: Extract<JobOutcome, { ok: false }>,
      logs: DraftResult["logs"],
      ms: number,
    ): DraftResult => {
      const e = failureError(o);
      return {
        status: e.status,
        headers: { "content-type": "application/json; charset=utf-8" },
        body: { error: { code: e.code, message: e.message } },
        logs,
        duration_ms: ms,
        error: runError(o),
      };
    };
    let imports: Map<string, string>;
    try {
      // Imports resolve against the app's saved modules; the draft is keyed by content, not by row.
      imports = await modules.resolve({
        id: `draft:${executionId}`,
        app_id: input.appId,
        name,
        source: input.source,
        updated_at: executionId,
      } as ScriptRecord);
    } catch (err) {
      if (!(err instanceof ScriptVisibleError)) throw err;
      return fail({ ok: false, kind: "script_error", message: err.message }, [], clock.now() - started);
    }
    const request: RequestView = {
      method: input.request.method.toUpperCase(),
      path: input.request.path,
      headers: Object.fromEntries(
        Object.entries(input.request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), String(v)]),
      ),
      body: input.request.body ?? null,
      params: {},
      query: input.request.query ?? {},
      rest: "",
    };
    const outcome = await engine.run({
      appId: input.appId,
      key: null,
      waitMs: SYNC_QUEUE_WAIT_MS,
      name,
      source: input.source,
      modules: imports,
      ctx: {
        execution_id: executionId,
        script_id: saved?.id ?? null,
        script_name: name,
        app_id: input.appId,
        request_id: executionId,
        invocation_type: "http",
        sdk_version: SDK_VERSION,
        request,
        event: null,
      },
      limits: resolveLimits(
        saved ? saved.sandbox : (input.sandbox ?? {}),
        saved ? saved.timeout_seconds : (input.timeoutSeconds ?? null),
        ctx.sandbox.ceilings,
      ),
      host: sdkHost(sdk, {
        appId: input.appId,
        scriptId: saved?.id ?? executionId,
        executionId,
        principal: input.principal,
        // A write at the maximum chain depth emits no trigger events: a draft fires none unless asked.
        depth: input.fireTriggers ? 0 : config.PLATFORM_MAX_TRIGGER_DEPTH,
      }),
    });
    if (!outcome.ok)
      return fail(
        {
          ok: false,
          kind: outcome.kind,
          message: outcome.message,
          ...(outcome.detail ? { detail: outcome.detail } : {}),
        },
        outcome.logs,
        outcome.durationMs,
      );
    const answer = toHttpAnswer(outcome.value);
    let body: unknown = answer.body;
    if (Buffer.isBuffer(answer.body)) {
      body = answer.body.toString("base64");
      answer.headers["x-body-encoding"] = "base64";
    } else if (answer.headers["content-type"]?.startsWith("application/json")) body = JSON.parse(answer.body);
    return {
      status: answer.status,
      headers: answer.headers,
      body,
      logs: outcome.logs,
      duration_ms: outcome.durationMs,
      error: null,
    };
  };

  return {
    engine,
    modules,
    http,
    sdk,
    executor,
    inbox,
    dispatcher: d,
    limits,
    invoke,
    runDraft,
    close: () => engine.close(),
  };
}

/** How long the executions log keeps an entry (the log is bounded by age). */
export const EXECUTION_LOG_RETENTION_MS = 7 * 24 * 3600 * 1000;
const PRUNE_EVERY_MS = 3600 * 1000;

/** Worker: the outbox dispatcher, the executions-log pruning, and the outbound HTTP agent's shutdown. */
export function dispatcherWorker(
  runtime: Runtime,
  ctx: Pick<PlatformContext, "database" | "clock" | "logger">,
): Worker {
  const repo = executionsRepo(ctx.database);
  let timer: { cancel(): void } | null = null;
  const prune = () =>
    repo
      .prune(toIso(ctx.clock.now() - EXECUTION_LOG_RETENTION_MS))
      .catch((err) => ctx.logger.warn({ err }, "pruning the executions log failed"));
  return {
    name: "dispatcher",
    async start() {
      await runtime.dispatcher.start();
      await prune();
      timer = ctx.clock.setInterval(() => void prune(), PRUNE_EVERY_MS);
    },
    async stop() {
      timer?.cancel();
      await runtime.dispatcher.stop();
      await runtime.close();
      await runtime.http.close();
    },
  };
}
