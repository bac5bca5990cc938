/**
 * Collection and topic patterns of triggers (seed: "collection pattern: *, prefix:*, or an exact
 * name"; "topic pattern: exact, <prefix>.* or *; a wildcard in mid-pattern is rejected").
 * A pattern is validated once when the trigger is created; matching is then a string test.
 */

export type PatternError = string;

const NAME_MAX = 200;

/**
 * Collection pattern: `*` (all), `<prefix>*` (collections starting with the prefix, e.g.
 * `orders:*` or `orders_*`), or an exact name. A `*` anywhere but the end is rejected.
 */
export function checkCollectionPattern(pattern: string): PatternError | null {
  if (pattern.length === 0 || pattern.length > NAME_MAX) return `must be 1 to ${NAME_MAX} characters`;
  if (/\s/.test(pattern)) return "must not contain whitespace";
  const star = pattern.indexOf("*");
  if (star !== -1 && star !== pattern.length - 1) return "a wildcard is only allowed at the end";
  return null;
}

export function matchCollection(pattern: string, collection: string): boolean {
  if (pattern === "*") return true;
  if (pattern.endsWith("*")) return collection.startsWith(pattern.slice(0, -1));
  return pattern === collection;
}

/** Topic pattern: an exact topic, `<prefix>.*` (any topic below the prefix) or `*`. */
export function checkTopicPattern(pattern: string): PatternError | null {
  if (pattern.length === 0 || pattern.length > NAME_MAX) return `must be 1 to ${NAME_MAX} characters`;
  if (/\s/.test(pattern)) return "must not contain whitespace";
  if (pattern === "*") return null;
  const star = pattern.indexOf("*");
  if (star === -1) return null;
  if (star !== pattern.length - 1 || !pattern.endsWith(".*") || pattern.length < 3)
    return "a wildcard is only allowed as `*` or as a final `.*` segment";
  return null;
}

export function matchTopic(pattern: string, topic: string): boolean {
  if (pattern === "*") return true;
  if (pattern.endsWith(".*"))
    return topic.startsWith(pattern.slice(0, -1)) && topic.length > pattern.length - 1;
  return pattern === topic;
}

/** An empty operation filter means every operation. */
export function matchOperation(operations: readonly string[], operation: string): boolean {
  return operations.length === 0 || operations.includes(operation);
}
