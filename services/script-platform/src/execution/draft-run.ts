import { AppError } from "@app/kit/errors";
import type { SandboxPolicy } from "../control/sandbox-policy.js";
import type { Principal } from "../control/scopes.js";
import { type ScriptLanguage, toRunnable } from "../control/script-language.js";
import { analyzeSource } from "../control/script-validation.js";
import type { ScriptRecord } from "../control/scripts-repository.js";
import type { DraftResult, DraftInput as EngineDraftInput, Runtime } from "./runtime.js";

/** What the Run panel sends (contract, "Authoring": POST /admin/scripts/{id}:run). */
export interface DraftInput {
  source?: string | undefined;
  language?: ScriptLanguage | undefined;
  request: EngineDraftInput["request"];
  fire_triggers?: boolean | undefined;
}

/**
 * Runs a script's unsaved draft (or its saved source) the way production runs it: the engine's
 * runDraft uses the same worker pool, sandbox, limits and SDK, writes no outbox row and no
 * executions-log entry. The draft passes the save-time checks first (422 as on save); TypeScript
 * is stripped the same way as at save, so errors point at the author's lines. Trigger events are
 * suppressed unless `fire_triggers` is set.
 */
export function createDraftRunner(deps: { sandbox: SandboxPolicy; runDraft: Runtime["runDraft"] }) {
  return {
    async run(script: ScriptRecord, input: DraftInput, principal: Principal | null): Promise<DraftResult> {
      if (script.kind !== "endpoint")
        throw new AppError(422, "not_an_endpoint", "Only endpoint scripts can be run; this is a module.");
      const language = input.language ?? script.language;
      const authored = input.source ?? script.authored_source ?? script.source;
      const runnable = toRunnable(authored, language);
      analyzeSource(runnable, script.kind, deps.sandbox.effective(script.sandbox).max_expr_depth);
      return deps.runDraft({
        appId: script.app_id,
        scriptId: script.id,
        source: runnable,
        request: input.request,
        principal,
        fireTriggers: input.fire_triggers === true,
      });
    },
  };
}
