import { createHash } from "node:crypto";
import { AppError, unavailable } from "@app/kit/errors";
import type { PlatformContext } from "../context.js";
import type { RequestView } from "../execution/executor.js";
import { failureError, toHttpAnswer } from "../execution/response.js";
import { ScriptVisibleError } from "../sandbox/engine.js";
import { resolveLimits } from "../sandbox/limits.js";
import { sdkHost } from "../sdk/host.js";
import { SDK_VERSION } from "../version.js";
import type { Principal } from "./scopes.js";
import { type ScriptLanguage, toRunnable } from "./script-language.js";
import { analyzeSource } from "./script-validation.js";
import type { ScriptRecord } from "./scripts-repo.js";

/** What the Run panel sends (contract, "Authoring": POST /admin/scripts/{id}:run). */
export interface DraftInput {
  source?: string | undefined;
  language?: ScriptLanguage | undefined;
  request: {
    method: string;
    path: string;
    query?: Record<string, string> | undefined;
    headers?: Record<string, string> | undefined;
    body?: unknown;
  };
  fire_triggers?: boolean | undefined;
}

export interface RunError {
  code: string;
  message: string;
  stack: string | null;
  line: number | null;
  column: number | null;
}

export interface DraftResult {
  status: number;
  headers: Record<string, string>;
  body: unknown;
  logs: { level: string; message: string; at: string }[];
  duration_ms: number;
  error: RunError | null;
}

/** The engine's draft entry point (platform.md, "engine notes (a)"); absent on the older engine. */
interface EngineDraftApi {
  runDraft(input: {
    appId: string;
    scriptId: string;
    source: string;
    request: DraftInput["request"];
    principal: Principal | null;
    fireTriggers: boolean;
  }): Promise<DraftResult>;
}

/** Draft runs at once in this process on the older in-process engine (the pool bounds them itself). */
const MAX_FALLBACK_DRAFTS = 4;

/** Frames like `at handler (name:12:5)` or `name:12:5`: the first one in the entry script. */
export function firstFrame(stack: string, name: string): { line: number; column: number } | null {
  const esc = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const m = new RegExp(`${esc}:(\\d+)(?::(\\d+))?`).exec(stack);
  if (!m) return null;
  return { line: Number(m[1]), column: m[2] ? Number(m[2]) : 1 };
}

/**
 * Runs a script's unsaved draft (or its saved source) the way production runs it: same sandbox,
 * limits and SDK, no outbox row and no executions-log entry. The draft passes the save-time checks
 * first (422 as on save). Trigger events are suppressed unless `fire_triggers` is set.
 */
export function createDraftRunner(ctx: PlatformContext) {
  let running = 0;

  const fallback = async (
    script: ScriptRecord,
    runnable: string,
    input: DraftInput,
    principal: Principal | null,
  ): Promise<DraftResult> => {
    const runtime = ctx.services.runtime;
    if (running >= MAX_FALLBACK_DRAFTS)
      throw unavailable(1, "Too many draft runs at once; try again shortly.", "busy");
    running++;
    try {
      const started = ctx.clock.now();
      const draft: ScriptRecord = {
        ...script,
        source: runnable,
        // The import-list cache is keyed by id + updated_at: key drafts by content instead.
        id: `draft:${script.id}`,
        updated_at: createHash("sha256").update(runnable).digest("hex"),
      };
      const fail = (code: string, message: string, stack: string | null): DraftResult => {
        const e = failureError({ ok: false, kind: code as "script_error", message });
        const at = stack ? firstFrame(stack, script.name) : firstFrame(message, script.name);
        return {
          status: e.status,
          headers: { "content-type": "application/json; charset=utf-8" },
          body: { error: { code: e.code, message: e.message } },
          logs: [],
          duration_ms: ctx.clock.now() - started,
          error: { code, message, stack, line: at?.line ?? null, column: at?.column ?? null },
        };
      };
      let modules: Map<string, string>;
      try {
        modules = await runtime.modules.resolve(draft);
      } catch (err) {
        if (err instanceof ScriptVisibleError) return fail("script_error", err.message, null);
        throw err;
      }
      const q = input.request.query ?? {};
      const request: RequestView = {
        method: input.request.method.toUpperCase(),
        path: input.request.path,
        headers: Object.fromEntries(
          Object.entries(input.request.headers ?? {}).map(([k, v]) => [k.toLowerCase(), v]),
        ),
        body: input.request.body ?? null,
        params: {},
        query: q,
        rest: "",
      };
      const executionId = `draft-${createHash("sha256").update(`${started}${Math.random()}`).digest("hex").slice(0, 16)}`;
      const outcome = await runtime.engine.run({
        appId: script.app_id,
        key: null,
        name: script.name,
        source: runnable,
        modules,
        ctx: {
          execution_id: executionId,
          script_id: script.id,
          script_name: script.name,
          app_id: script.app_id,
          request_id: executionId,
          invocation_type: "http",
          sdk_version: SDK_VERSION,
          request,
          event: null,
        },
        limits: resolveLimits(script.sandbox, script.timeout_seconds, ctx.sandbox.ceilings),
        host: sdkHost(runtime.sdk, {
          appId: script.app_id,
          scriptId: script.id,
          executionId,
          principal,
          // A write at the maximum chain depth emits no trigger events: a draft fires none unless asked.
          depth: input.fire_triggers ? 0 : ctx.config.PLATFORM_MAX_TRIGGER_DEPTH,
        }),
      });
      if (!outcome.ok) {
        const r = fail(outcome.kind, outcome.message, (outcome as { stack?: string }).stack ?? null);
        return { ...r, logs: outcome.logs, duration_ms: outcome.durationMs };
      }
      const answer = toHttpAnswer(outcome.value);
      let body: unknown = answer.body;
      if (Buffer.isBuffer(answer.body)) {
        body = answer.body.toString("base64");
        answer.headers["x-body-encoding"] = "base64";
      } else if (answer.headers["content-type"]?.startsWith("application/json"))
        body = JSON.parse(answer.body);
      return {
        status: answer.status,
        headers: answer.headers,
        body,
        logs: outcome.logs,
        duration_ms: outcome.durationMs,
        error: null,
      };
    } finally {
      running--;
    }
  };

  return {
    async run(script: ScriptRecord, input: DraftInput, principal: Principal | null): Promise<DraftResult> {
      if (script.kind !== "endpoint")
        throw new AppError(422, "not_an_endpoint", "Only endpoint scripts can be run; this is a module.");
      const language = input.language ?? script.language;
      const authored = input.source ?? script.authored_source ?? script.source;
      const runnable = toRunnable(authored, language);
      analyzeSource(runnable, script.kind, ctx.sandbox.effective(script.sandbox).max_expr_depth);
      const engine = ctx.services.runtime as unknown as Partial<EngineDraftApi>;
      if (typeof engine.runDraft === "function")
        return engine.runDraft({
          appId: script.app_id,
          scriptId: script.id,
          source: runnable,
          request: input.request,
          principal,
          fireTriggers: input.fire_triggers === true,
        });
      return fallback(script, runnable, input, principal);
    },
  };
}
export type DraftRunner = ReturnType<typeof createDraftRunner>;
