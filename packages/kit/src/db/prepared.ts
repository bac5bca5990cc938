import { type Compilable, CompiledQuery, type Kysely, PostgresAdapter, type RawBuilder } from "kysely";

/**
 * Leading comment of every statement compiled by `preparedQuery`. The PostgreSQL connection of
 * `openDatabase` sends such statements as named prepared statements (parsed and planned once per
 * connection); SQLite's connections cache every statement by its text anyway.
 */
export const PREPARED_MARK = "/*prepared*/ ";

/** The placeholders a query builder receives: one opaque value per parameter name. */
export type Placeholders<P> = { readonly [K in keyof P]: P[K] };

type Slot = { key: string } | { value: unknown };
interface Entry {
  sql: string;
  slots: Slot[];
}

const SENTINEL = "\u0001prepared:";

/**
 * A hot query built with Kysely once per shape and then run from its cached SQL text: the query
 * builder and compiler cost nothing per request, and the statement itself is prepared once
 * (SQLite statement cache; PostgreSQL named statement).
 *
 * `build(db, p)` receives placeholders instead of values: pass `p.x` wherever the value of `x`
 * goes (as a bound value: `.where("id", "=", p.id)`, `.limit(p.limit)`), never inspect it. Values
 * the builder binds itself (a literal `0`) stay as they are. `shape` tells apart the variants the
 * builder produces (a filter present or not, the length of an IN list); it must be the same
 * whenever the builder would produce the same SQL. Arrays: bind one array value (PostgreSQL
 * `= any(...)`, SQLite `json_each(...)` of a JSON string), not a variable-length IN list.
 */
export function preparedQuery<DB, P extends Record<string, unknown>, R>(
  build: (db: Kysely<DB>, p: Placeholders<P>) => Compilable<R> | RawBuilder<R>,
): (db: Kysely<DB>, params: P, shape?: string) => Promise<R[]> {
  // Per Kysely instance (the SQL differs between dialects), then per shape.
  const compiled = new WeakMap<Kysely<DB>, Map<string, Entry>>();
  const compile = (db: Kysely<DB>, params: P): Entry => {
    const placeholders = Object.fromEntries(
      Object.keys(params).map((k) => [k, `${SENTINEL}${k}`]),
    ) as unknown as Placeholders<P>;
    // A raw `sql` template compiles against the database; query builders ignore the argument.
    const q = build(db, placeholders).compile(db);
    const slots = q.parameters.map((v): Slot => {
      if (typeof v !== "string" || !v.includes(SENTINEL)) return { value: v };
      const key = v.slice(SENTINEL.length);
      if (!v.startsWith(SENTINEL) || !Object.hasOwn(params, key))
        throw new Error("preparedQuery: a placeholder was transformed; bind it as a value as it is");
      return { key };
    });
    return { sql: PREPARED_MARK + q.sql, slots };
  };
  return async (db, params, shape = "") => {
    let byShape = compiled.get(db);
    if (!byShape) {
      byShape = new Map();
      compiled.set(db, byShape);
    }
    let entry = byShape.get(shape);
    if (!entry) {
      entry = compile(db, params);
      byShape.set(shape, entry);
    }
    const values = entry.slots.map((s) => ("key" in s ? params[s.key] : s.value));
    const result = await db.executeQuery<R>(CompiledQuery.raw(entry.sql, values));
    return result.rows;
  };
}

/** True on PostgreSQL (for builders whose SQL differs by dialect, such as array parameters). */
export const isPostgres = <DB>(db: Kysely<DB>): boolean =>
  db.getExecutor().adapter instanceof PostgresAdapter;

/**
 * A statement whose SQL depends only on how many rows it carries, compiled once per row count:
 * Kysely builds it from a template, later calls only bind parameters (no query building or
 * compiling per batch). `params(n)` is how many parameters `n` rows bind, checked once per count.
 * `prepared` marks it for kit's PostgreSQL connection as a named prepared statement (parsed and
 * planned once per connection).
 */
export function compiledPerRowCount<DB>(
  build: (trx: Kysely<DB>, n: number) => { compile(): CompiledQuery },
  params: (n: number) => number,
  opts: { prepared?: boolean; maxCached?: number } = {},
): (trx: Kysely<DB>, n: number) => CompiledQuery {
  const cache = new Map<number, CompiledQuery>();
  const maxCached = opts.maxCached ?? 64;
  return (trx, n) => {
    const cached = cache.get(n);
    if (cached) return cached;
    const built = build(trx, n).compile();
    if (built.parameters.length !== params(n))
      throw new Error(
        `compiled statement: ${built.parameters.length} parameters for ${n} rows, expected ${params(n)}`,
      );
    const compiled = opts.prepared ? { ...built, sql: PREPARED_MARK + built.sql } : built;
    if (n <= maxCached) cache.set(n, compiled);
    return compiled;
  };
}

/**
 * A multi-row statement compiled once per row count (see compiledPerRowCount). `build(trx, n)`
 * must produce a statement whose parameters are exactly `n` rows of `columns` values in that
 * order (a template row with every column set, e.g. `values(Array(n).fill(t))`).
 */
export function multiRowStatement<R, DB>(
  columns: readonly (keyof R & string)[],
  build: (trx: Kysely<DB>, n: number) => { compile(): CompiledQuery },
  maxCached = 64,
) {
  const compiled = compiledPerRowCount(build, (n) => n * columns.length, { maxCached });
  return async (trx: Kysely<DB>, rows: readonly R[]): Promise<void> => {
    if (rows.length === 0) return;
    const statement = compiled(trx, rows.length);
    const parameters: unknown[] = [];
    for (const r of rows) for (const c of columns) parameters.push(r[c]);
    await trx.executeQuery({ ...statement, parameters });
  };
}
