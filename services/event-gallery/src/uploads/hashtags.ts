import { validationFailed } from "@app/kit/errors";

import { MAX_HASHTAG_LENGTH, TAG_RE } from "../feed/tags.js";

export { MAX_HASHTAG_LENGTH, normalizeTagFilter } from "../feed/tags.js";
export const MAX_HASHTAGS = 30;

/**
 * The one hashtag rule for upload, edit and comment paths: split on commas/whitespace, trim,
 * strip one leading #, lowercase, dedupe, sort. Violations → 422 `validation_failed` on `field`.
 * Input is either one separated string or a list of such strings (repeated form fields).
 */
export function normalizeHashtags(
  input: string | readonly string[] | undefined,
  field = "hashtags",
): string[] {
  if (input === undefined) return [];
  const raw = (typeof input === "string" ? [input] : input).flatMap((s) => s.split(/[\s,]+/));
  const tags = new Set<string>();
  for (const piece of raw) {
    const tag = piece.trim().replace(/^#/, "").toLowerCase();
    if (tag === "") continue;
    if (tag.length > MAX_HASHTAG_LENGTH)
      throw validationFailed(field, `A hashtag may have at most ${MAX_HASHTAG_LENGTH} characters.`);
    if (!TAG_RE.test(tag))
      throw validationFailed(field, "Hashtags may contain only ASCII letters, digits and underscores.");
    tags.add(tag);
  }
  if (tags.size > MAX_HASHTAGS)
    throw validationFailed(field, `At most ${MAX_HASHTAGS} hashtags are allowed.`);
  return [...tags].sort();
}
