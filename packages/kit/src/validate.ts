import type { z } from "zod";
import { AppError } from "./errors.js";

/**
 * The 422 `validation_failed` error for a zod failure, naming the first failing field.
 * Unknown keys of strict object schemas become `Unknown field: x.` (contracts/common.md).
 * A custom issue may carry `params.notFound` (a message): then the answer is 404 `not_found`,
 * for path ids that cannot exist (see `notFoundUnless`).
 */
export function validationError(error: z.ZodError): AppError {
  const issue = error.issues[0];
  if (!issue) return new AppError(422, "validation_failed", "The request is invalid.", { field: null });
  if (issue.code === "custom" && typeof issue.params?.notFound === "string")
    return new AppError(404, "not_found", issue.params.notFound);
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0] ?? "";
    const field = [...issue.path.map(String), key].join(".");
    return new AppError(422, "validation_failed", `Unknown field: ${field}.`, { field });
  }
  const field = issue.path.map(String).join(".") || null;
  const what = field ? `${field}: ` : "";
  return new AppError(422, "validation_failed", `${what}${issue.message}`.replace(/\.?$/, "."), { field });
}

/**
 * Parse input with a zod schema; failures become 422 `validation_failed` naming the field.
 * Strict object schemas turn unknown keys into the same error (contracts/common.md).
 * Routes declare their schemas instead (`@app/kit/http/typed-routes`); this is for input that
 * is not a request part (a config blob, a message).
 */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const res = schema.safeParse(input);
  if (res.success) return res.data;
  throw validationError(res.error);
}
