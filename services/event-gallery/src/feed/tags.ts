/** The hashtag alphabet and length (shared with uploads/hashtags.ts, which imports them). */
export const MAX_HASHTAG_LENGTH = 50;
export const TAG_RE = /^[A-Za-z0-9_]+$/;

/** Normalise one tag for a feed filter (same rules as uploads; an invalid tag matches nothing). */
export function normalizeTagFilter(input: string): string | null {
  const tag = input.trim().replace(/^#/, "").toLowerCase();
  return tag !== "" && tag.length <= MAX_HASHTAG_LENGTH && TAG_RE.test(tag) ? tag : null;
}
