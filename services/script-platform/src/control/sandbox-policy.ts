import { AppError } from "@app/kit/errors";
import { z } from "zod";
import type { Config } from "../config.js";

export const SANDBOX_KNOBS = [
  "max_operations",
  "max_string_size",
  "max_array_size",
  "max_map_size",
  "max_call_levels",
  "max_expr_depth",
] as const;
export type SandboxKnob = (typeof SANDBOX_KNOBS)[number];
export type SandboxOverrides = Partial<Record<SandboxKnob, number>>;
export type SandboxLimits = Record<SandboxKnob, number>;

/** Hard ceiling of timeout_seconds, "regardless" (seed); the default is 30. */
export const TIMEOUT_CEILING_S = 300;
export const DEFAULT_TIMEOUT_S = 30;

export interface SandboxPolicy {
  /** Per-knob ceilings (env-overridable); also the defaults when a script sets nothing. */
  ceilings: SandboxLimits;
  /** Validate a sandbox override object: all-optional positive integers, no unknown keys, each ≤ its ceiling. */
  validate(input: unknown, field?: string): SandboxOverrides;
  /** The limits a run uses: the script's overrides over the platform defaults. */
  effective(overrides: SandboxOverrides | null | undefined): SandboxLimits;
}

const overridesSchema = z.strictObject(
  Object.fromEntries(
    SANDBOX_KNOBS.map((k) => [
      k,
      z.number().int("must be an integer").min(1, "must be at least 1").optional(),
    ]),
  ) as Record<SandboxKnob, z.ZodOptional<z.ZodNumber>>,
);

export function createSandboxPolicy(config: Config): SandboxPolicy {
  const ceilings: SandboxLimits = {
    max_operations: config.PLATFORM_SANDBOX_MAX_OPERATIONS,
    max_string_size: config.PLATFORM_SANDBOX_MAX_STRING_SIZE,
    max_array_size: config.PLATFORM_SANDBOX_MAX_ARRAY_SIZE,
    max_map_size: config.PLATFORM_SANDBOX_MAX_MAP_SIZE,
    max_call_levels: config.PLATFORM_SANDBOX_MAX_CALL_LEVELS,
    max_expr_depth: config.PLATFORM_SANDBOX_MAX_EXPR_DEPTH,
  };
  return {
    ceilings,
    validate(input, field = "sandbox") {
      if (input === undefined || input === null) return {};
      if (typeof input !== "object" || Array.isArray(input))
        throw new AppError(422, "validation_failed", `${field} must be an object.`, { field });
      const res = overridesSchema.safeParse(input);
      if (!res.success) {
        const issue = res.error.issues[0];
        if (issue?.code === "unrecognized_keys") {
          const key = issue.keys[0] ?? "";
          throw new AppError(422, "validation_failed", `Unknown sandbox setting: ${key}.`, {
            field: `${field}.${key}`,
            allowed: SANDBOX_KNOBS,
          });
        }
        const knob = String(issue?.path[0] ?? "");
        throw new AppError(422, "validation_failed", `${field}.${knob} ${issue?.message ?? "is invalid"}.`, {
          field: `${field}.${knob}`,
        });
      }
      const out: SandboxOverrides = {};
      for (const k of SANDBOX_KNOBS) {
        const v = res.data[k];
        if (v === undefined) continue;
        if (v > ceilings[k])
          throw new AppError(
            422,
            "above_ceiling",
            `${field}.${k} = ${v} is above the platform ceiling of ${ceilings[k]}.`,
            { field: `${field}.${k}`, value: v, ceiling: ceilings[k] },
          );
        out[k] = v;
      }
      return out;
    },
    effective(overrides) {
      return { ...ceilings, ...(overrides ?? {}) };
    },
  };
}
