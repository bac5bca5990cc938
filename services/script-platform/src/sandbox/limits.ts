/**
 * Sandbox knobs (seed "Script" section) and how they become engine settings. A script's
 * `sandbox` object overrides the platform defaults per knob; control validates the overrides
 * against the ceilings at save time, and the runtime clamps again so a row written by other means
 * cannot lift a ceiling.
 */
export interface SandboxKnobs {
  max_operations: number;
  max_string_size: number;
  max_array_size: number;
  max_map_size: number;
  max_call_levels: number;
  max_expr_depth: number;
}

export const SANDBOX_CEILINGS: SandboxKnobs = {
  max_operations: 10_000_000,
  max_string_size: 1024 * 1024,
  max_array_size: 100_000,
  max_map_size: 100_000,
  max_call_levels: 128,
  max_expr_depth: 128,
};

/** Defaults are the ceilings: an empty sandbox object means "platform defaults". */
export const SANDBOX_DEFAULTS: SandboxKnobs = { ...SANDBOX_CEILINGS };

export const DEFAULT_TIMEOUT_SECONDS = 30;
export const MAX_TIMEOUT_SECONDS = 300;

/** Resolved limits for one run. */
export interface RunLimits extends SandboxKnobs {
  timeoutMs: number;
}

export function resolveLimits(
  sandbox: Partial<Record<keyof SandboxKnobs, unknown>> | null | undefined,
  timeoutSeconds: number | null | undefined,
  ceilings: SandboxKnobs = SANDBOX_CEILINGS,
): RunLimits {
  const out = { ...SANDBOX_DEFAULTS };
  for (const key of Object.keys(out) as (keyof SandboxKnobs)[]) {
    const v = sandbox?.[key];
    const base = Math.min(SANDBOX_DEFAULTS[key], ceilings[key]);
    out[key] = typeof v === "number" && Number.isInteger(v) && v > 0 ? Math.min(v, ceilings[key]) : base;
  }
  const t =
    typeof timeoutSeconds === "number" && Number.isFinite(timeoutSeconds) && timeoutSeconds > 0
      ? Math.min(timeoutSeconds, MAX_TIMEOUT_SECONDS)
      : DEFAULT_TIMEOUT_SECONDS;
  return { ...out, timeoutMs: Math.round(t * 1000) };
}

/**
 * QuickJS counts "operations" at its poll points (loop back-edges and calls) and calls the
 * interrupt handler once per this many of them; the budget is charged in these steps, so it is
 * exact to within one step.
 */
export const OPS_PER_INTERRUPT = 5_000;
/**
 * Operations one promise job counts, on top of the interpreter's own poll points: a job runs
 * a few bytecodes but costs the engine far more (promise machinery, a call), so an `await` loop
 * or a chain of jobs counted by poll points alone ran 15-30 times longer than a sync loop before
 * its budget ran out. With this weight the default budget allows 40,000 jobs per run.
 */
export const OPS_PER_JOB = 250;

/**
 * The engine limits stack *bytes*, not frames; one call level is budgeted at 1 KiB (a plain
 * recursive function uses ~0.2 KiB, a callback through a builtin ~0.7 KiB), plus a fixed base for
 * the SDK prelude and the handler's own frames. So at least max_call_levels ordinary nested calls
 * always fit, and unbounded recursion ends well before the host is at risk.
 */
export function stackBytes(limits: Pick<SandboxKnobs, "max_call_levels">): number {
  return 16 * 1024 + limits.max_call_levels * 1024;
}

/**
 * Memory for the whole context, derived from the size knobs: room for several strings and
 * collections at their maximum size, plus a base for the engine and the SDK prelude. With the
 * defaults this is about 40 MiB.
 */
export function memoryBytes(
  limits: Pick<SandboxKnobs, "max_string_size" | "max_array_size" | "max_map_size">,
): number {
  return 16 * 1024 * 1024 + 8 * limits.max_string_size + 64 * (limits.max_array_size + limits.max_map_size);
}
