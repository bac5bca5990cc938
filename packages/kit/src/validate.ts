import type { z } from "zod";
import { AppError } from "./errors.js";

/**
 * The 422 `validation_failed` error for a zod failure, naming the first failing field.
 * Unknown keys of strict object schemas become `Unknown field: x.` (the common contract).
 * A custom issue may carry `params.notFound` (a message): then the answer is 404 `not_found`,
 * for path ids that cannot exist (see `notFoundUnless`).
 */
export function validationError(error: z.ZodError): AppError {
  const issue = mostSpecific(error.issues[0]);
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
 * A union's failure names the branch that got furthest (the deepest first issue), so a body of
 * the right type reports its own field instead of a bare "Invalid input".
 */
function mostSpecific(issue: z.core.$ZodIssue | undefined): z.core.$ZodIssue | undefined {
  if (issue?.code !== "invalid_union" || issue.errors.length === 0) return issue;
  let best: z.core.$ZodIssue | undefined;
  for (const branch of issue.errors) {
    const first = mostSpecific(branch[0]);
    if (first && (!best || first.path.length > best.path.length)) best = first;
  }
  return best ? { ...best, path: [...issue.path, ...best.path] } : issue;
}

/**
 * Parse input with a zod schema; failures become 422 `validation_failed` naming the field.
 * Strict object schemas turn unknown keys into the same error (the common contract).
 * Routes declare their schemas instead (`@app/kit/http/typed-routes`); this is for input that
 * is not a request part (a config blob, a message).
 */
export function parseInput<T extends z.ZodType>(schema: T, input: unknown): z.output<T> {
  const res = schema.safeParse(input);
  if (res.success) return res.data;
  throw validationError(res.error);
}
