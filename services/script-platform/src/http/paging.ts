import { parseInput } from "@app/kit/validate";
import { z } from "zod";

/** `?limit=&cursor=` for a route's `querystring` schema (unknown parameters are ignored). */
export const PageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(100).optional(),
});

/** `?limit=&cursor=` (cursor = the last id of the previous page; lists are ordered by id). */
export function pageOf(query: unknown): { limit: number; after: string | null } {
  const q = parseInput(PageQuery, query ?? {});
  return { limit: q.limit, after: q.cursor ?? null };
}

/** The list shape of the contract: `{items, next_cursor}` (null at the end). */
export function listOf<T extends { id: string }>(
  items: T[],
  limit: number,
): { items: T[]; next_cursor: string | null } {
  return { items, next_cursor: items.length === limit ? (items[items.length - 1]?.id ?? null) : null };
}
