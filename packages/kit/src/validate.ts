import type { z } from "zod";
import { AppError } from "./errors.js";

/**
 * Parse input with a zod schema; failures become 422 `validation_failed` naming the field.
 * Strict object schemas turn unknown keys into the same error (contracts/common.md).
 */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const res = schema.safeParse(input);
  if (res.success) return res.data;
  const issue = res.error.issues[0];
  if (!issue) throw new AppError(422, "validation_failed", "The request is invalid.", { field: null });
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0] ?? "";
    const field = [...issue.path.map(String), key].join(".");
    throw new AppError(422, "validation_failed", `Unknown field: ${field}.`, { field });
  }
  const field = issue.path.map(String).join(".") || null;
  const what = field ? `${field}: ` : "";
  throw new AppError(422, "validation_failed", `${what}${issue.message}`.replace(/\.?$/, "."), { field });
}
