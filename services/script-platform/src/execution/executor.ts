import type { Clock } from "@app/kit/clock";
import type { ScriptLookup } from "../context.js";
import type { SandboxPolicy } from "../control/sandbox-policy.js";
import type { Principal } from "../control/scopes.js";
import type { ScriptRecord } from "../control/scripts-repo.js";
import type { Engine, FailureKind, RunOutcome } from "../sandbox/engine.js";
import { ScriptVisibleError } from "../sandbox/engine.js";
import { resolveLimits } from "../sandbox/limits.js";
import type { ModuleResolver } from "../sandbox/module-loader.js";
import { sdkHost } from "../sdk/host.js";
import type { SdkDeps } from "../sdk/types.js";
import { SDK_VERSION } from "../version.js";
import type { ExecutionRecord } from "./executions-repo.js";

/** ctx.request as a script sees it. */
export interface RequestView {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: unknown;
  params: Record<string, string>;
  query: Record<string, string>;
  rest: string;
}

/** One run to perform (built by the dispatcher from an outbox row). */
export interface Job {
  executionId: string;
  appId: string;
  scriptId: string;
  /** http, or the event source kind (kv, docs, files, pubsub, cron, email, dead_letter). */
  invocationType: string;
  requestId: string | null;
  request: RequestView | null;
  event: unknown;
  principal: Principal | null;
  depth: number;
  /** The script as the request already loaded it (sync requests run in this process); else loaded here. */
  script?: ScriptRecord | null;
}

export type JobOutcome =
  | { ok: true; value: unknown }
  | { ok: false; kind: FailureKind | "script_not_found"; message: string };

export interface Finished {
  outcome: JobOutcome;
  record: ExecutionRecord;
}

export interface ExecutorDeps {
  clock: Clock;
  scripts: ScriptLookup;
  sandbox: Pick<SandboxPolicy, "ceilings">;
  engine: Engine;
  modules: ModuleResolver;
  sdk: SdkDeps;
}

/**
 * Runs one job: loads the endpoint script (of the job's app only), resolves its imports, builds
 * ctx, runs it in the sandbox with its limits and the SDK bound to the job's app and principal,
 * and describes the run as an executions-log record. Never throws for a script's failure.
 */
export function createExecutor(deps: ExecutorDeps) {
  const { clock } = deps;
  return {
    async run(job: Job, signal?: AbortSignal): Promise<Finished> {
      const startedAt = clock.iso();
      const started = clock.now();
      const record = (outcome: JobOutcome, logs: RunOutcome["logs"], durationMs: number): Finished => ({
        outcome,
        record: {
          id: job.executionId,
          app_id: job.appId,
          script_id: job.scriptId,
          invocation_type: job.invocationType,
          status: outcome.ok ? "succeeded" : "failed",
          duration_ms: durationMs,
          logs,
          error: outcome.ok ? null : { kind: outcome.kind, message: outcome.message },
          created_at: startedAt,
          finished_at: clock.iso(),
        },
      });
      const script = job.script?.id === job.scriptId ? job.script : await deps.scripts.byId(job.scriptId);
      if (!script || script.app_id !== job.appId || script.kind !== "endpoint")
        return record({ ok: false, kind: "script_not_found", message: "The script does not exist." }, [], 0);
      let modules: Map<string, string>;
      try {
        modules = await deps.modules.resolve(script);
      } catch (err) {
        if (!(err instanceof ScriptVisibleError)) throw err;
        return record({ ok: false, kind: "script_error", message: err.message }, [], clock.now() - started);
      }
      const ctx = {
        execution_id: job.executionId,
        script_id: script.id,
        script_name: script.name,
        app_id: script.app_id,
        request_id: job.requestId,
        invocation_type: job.invocationType,
        sdk_version: SDK_VERSION,
        request: job.request,
        event: job.event ?? null,
      };
      const outcome = await deps.engine.run({
        name: script.name,
        source: script.source,
        modules,
        ctx,
        ...(signal ? { signal } : {}),
        limits: resolveLimits(script.sandbox, script.timeout_seconds, deps.sandbox.ceilings),
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
        : { ok: false, kind: outcome.kind, message: outcome.message };
      return record(o, outcome.logs, outcome.durationMs);
    },
  };
}
export type Executor = ReturnType<typeof createExecutor>;
