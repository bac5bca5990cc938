import { createHash } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import type { ScriptLookup } from "../context.js";
import type { SandboxPolicy } from "../control/sandbox-policy.js";
import type { ScriptRecord } from "../control/scripts-repository.js";
import type { Finished, Job, JobOutcome, RunError } from "../dispatch/job.js";
import type { RunOutcome } from "../sandbox/engine.js";
import { ScriptVisibleError } from "../sandbox/engine.js";
import { type RunLimits, resolveLimits } from "../sandbox/limits.js";
import { Lru } from "../sandbox/lru.js";
import type { ModuleResolver } from "../sandbox/module-loader.js";
import type { PoolRun } from "../sandbox/pool.js";
import { sdkHost } from "../sdk/host.js";
import type { SdkDeps } from "../sdk/types.js";
import { SDK_VERSION } from "../version.js";

// The job contract the dispatcher drives lives in dispatch/job.ts (dispatch depends on no module here).
export type { Finished, Job, JobOutcome, RequestView } from "../dispatch/job.js";

/** What runs a script: the worker pool (pool.ts), or anything with its contract. */
export interface ScriptRunner {
  run(req: PoolRun): Promise<RunOutcome>;
}

export interface ExecutorDeps {
  clock: Clock;
  scripts: ScriptLookup;
  sandbox: Pick<SandboxPolicy, "ceilings">;
  engine: ScriptRunner;
  modules: ModuleResolver;
  sdk: SdkDeps;
  /** Written on every execution record: which process ran it. */
  instanceId: string;
}

/** The record's error for a failed outcome (the stack and position only for script errors). */
export function runError(outcome: JobOutcome): RunError | null {
  if (outcome.ok) return null;
  return {
    code: outcome.kind,
    message: outcome.message,
    stack: outcome.detail?.stack ?? null,
    line: outcome.detail?.line ?? null,
    column: outcome.detail?.column ?? null,
  };
}

/** A run's outcome with its executions-log record. */
function finishedRun(
  job: Job,
  deps: Pick<ExecutorDeps, "clock" | "instanceId">,
  startedAt: string,
  outcome: JobOutcome,
  logs: RunOutcome["logs"],
  durationMs: number,
): Finished {
  return {
    outcome,
    record: {
      id: job.executionId,
      app_id: job.appId,
      script_id: job.scriptId,
      invocation_type: job.invocationType,
      status: outcome.ok ? "succeeded" : "failed",
      duration_ms: durationMs,
      logs,
      error: runError(outcome),
      instance_id: deps.instanceId,
      created_at: startedAt,
      finished_at: deps.clock.iso(),
    },
  };
}

/**
 * The warm-context key of a run: app, script id, and a digest of the entry's and every imported
 * module's source, so a change to any module the script reaches gives its dependants a new key.
 */
export function versionKey(
  script: Pick<ScriptRecord, "app_id" | "id" | "name" | "source">,
  modules: ReadonlyMap<string, string>,
): string {
  const h = createHash("sha256").update(script.name).update("\0").update(script.source);
  for (const [name, src] of [...modules].sort(([a], [b]) => (a < b ? -1 : 1)))
    h.update("\0").update(name).update("\0").update(src);
  return `${script.app_id}:${script.id}:${h.digest("base64url").slice(0, 22)}`;
}

/**
 * Runs one job: loads the endpoint script (of the job's app only), resolves its imports, builds
 * ctx, runs it in the sandbox with its limits and the SDK bound to the job's app and principal,
 * and describes the run as an executions-log record. Never throws for a script's failure.
 */
export function createExecutor(deps: ExecutorDeps) {
  const { clock } = deps;
  // Keys of import-free scripts by id, with the name and source they were computed from: the
  // digest is computed once per version, not per run (comparing the source is far cheaper than
  // hashing it). Scripts with imports are digested each run (a module may have changed).
  const soleKeys = new Lru<string, { app: string; name: string; source: string; key: string }>(1024);
  const keyOf = (script: ScriptRecord, modules: ReadonlyMap<string, string>): string => {
    if (modules.size > 0) return versionKey(script, modules);
    const memo = soleKeys.get(script.id);
    if (memo && memo.source === script.source && memo.name === script.name && memo.app === script.app_id)
      return memo.key;
    const key = versionKey(script, modules);
    soleKeys.set(script.id, { app: script.app_id, name: script.name, source: script.source, key });
    return key;
  };
  // A script record's limits, resolved once per record object (the route table and the claim's
  // batch read hand the same record to many runs; a saved change is a new record).
  const limitsOf = new WeakMap<ScriptRecord, RunLimits>();
  const limitsFor = (script: ScriptRecord): RunLimits => {
    let limits = limitsOf.get(script);
    if (!limits) {
      limits = resolveLimits(script.sandbox, script.timeout_seconds, deps.sandbox.ceilings);
      limitsOf.set(script, limits);
    }
    return limits;
  };
  return {
    async scripts(ids: readonly string[]): Promise<Map<string, ScriptRecord>> {
      return new Map((await deps.scripts.byIds(ids)).map((s) => [s.id, s]));
    },
    async run(job: Job, signal?: AbortSignal): Promise<Finished> {
      const startedAt = clock.iso();
      const started = clock.now();
      const script = job.script?.id === job.scriptId ? job.script : await deps.scripts.byId(job.scriptId);
      if (!script || script.app_id !== job.appId || script.kind !== "endpoint")
        return finishedRun(
          job,
          deps,
          startedAt,
          { ok: false, kind: "script_not_found", message: "The script does not exist." },
          [],
          0,
        );
      let modules: Map<string, string>;
      try {
        modules = await deps.modules.resolve(script);
      } catch (err) {
        if (!(err instanceof ScriptVisibleError)) throw err;
        return finishedRun(
          job,
          deps,
          startedAt,
          { ok: false, kind: "script_error", message: err.message },
          [],
          clock.now() - started,
        );
      }
      const head = {
        execution_id: job.executionId,
        script_id: script.id,
        script_name: script.name,
        app_id: script.app_id,
        request_id: job.requestId,
        invocation_type: job.invocationType,
        sdk_version: SDK_VERSION,
      };
      // The ctx as JSON text when the request came as text and there is no event (sync HTTP
      // runs): the same text JSON.stringify(ctx) would give, with the request's keys in the
      // row payload's order (as async runs see them, decoded from that payload).
      const ctxJson =
        job.requestJson && (job.event ?? null) === null
          ? `${JSON.stringify(head).slice(0, -1)},"request":${job.requestJson},"event":null}`
          : undefined;
      const ctx = ctxJson === undefined ? { ...head, request: job.request, event: job.event ?? null } : null;
      const outcome = await deps.engine.run({
        appId: script.app_id,
        key: keyOf(script, modules),
        ...(job.waitMs !== undefined ? { waitMs: job.waitMs } : {}),
        ...(job.onPark ? { onPark: job.onPark } : {}),
        name: script.name,
        source: script.source,
        modules,
        ctx,
        ...(ctxJson !== undefined ? { ctxJson } : {}),
        ...(signal ? { signal } : {}),
        limits: limitsFor(script),
        host: sdkHost(deps.sdk, {
          appId: script.app_id,
          scriptId: script.id,
          executionId: job.executionId,
          principal: job.principal,
          depth: job.depth,
        }),
      });
      const o: JobOutcome = outcome.ok
        ? { ok: true, value: outcome.value }
        : {
            ok: false,
            kind: outcome.kind,
            message: outcome.message,
            ...(outcome.detail ? { detail: outcome.detail } : {}),
          };
      return finishedRun(job, deps, startedAt, o, outcome.logs, outcome.durationMs);
    },
  };
}
export type Executor = ReturnType<typeof createExecutor>;
