import type { SelectQueryBuilder } from "kysely";

// Any row shape: these helpers only add a locking clause.
// biome-ignore lint/suspicious/noExplicitAny: the query builder's row types are irrelevant here
type AnySelect = SelectQueryBuilder<any, any, any>;

/**
 * Every difference between SQLite and PostgreSQL lives here (DESIGN.md "Data"). Services write
 * one query and ask this module for the parts that differ.
 */
export type Backend = "sqlite" | "postgres";

/** Column types used in migration SQL as `{{name}}` tokens. */
const TYPES: Record<Backend, Record<string, string>> = {
  sqlite: {
    timestamp: "TEXT",
    json: "TEXT",
    bytes: "BLOB",
    bigint: "INTEGER",
    bool: "INTEGER",
    autoid: "INTEGER PRIMARY KEY AUTOINCREMENT",
  },
  postgres: {
    timestamp: "TIMESTAMPTZ",
    json: "JSONB",
    bytes: "BYTEA",
    bigint: "BIGINT",
    bool: "INTEGER",
    autoid: "BIGSERIAL PRIMARY KEY",
  },
};

export class Dialect {
  constructor(readonly backend: Backend) {}

  /** Replace `{{timestamp}}`, `{{json}}`, `{{bytes}}`, `{{bigint}}`, `{{bool}}`, `{{autoid}}`. */
  renderSql(template: string): string {
    return template.replace(/\{\{(\w+)\}\}/g, (whole, name: string) => {
      const t = TYPES[this.backend][name];
      if (!t) throw new Error(`unknown migration token ${whole}`);
      return t;
    });
  }

  /**
   * Share lock on the selected rows (PostgreSQL `FOR SHARE`). SQLite has no row locks: a write
   * transaction there is `BEGIN IMMEDIATE`, which already excludes every other writer.
   */
  forShare<QB extends AnySelect>(qb: QB): QB {
    return this.backend === "postgres" ? (qb.forShare() as QB) : qb;
  }

  forUpdate<QB extends AnySelect>(qb: QB): QB {
    return this.backend === "postgres" ? (qb.forUpdate() as QB) : qb;
  }

  /** Claim rows nobody else holds (PostgreSQL `FOR UPDATE SKIP LOCKED`; SQLite: the write lock). */
  forUpdateSkipLocked<QB extends AnySelect>(qb: QB): QB {
    return this.backend === "postgres" ? (qb.forUpdate().skipLocked() as QB) : qb;
  }

  /** Value to bind into a JSON column. */
  json(value: unknown): string {
    return JSON.stringify(value);
  }

  /**
   * Value read from a JSON column. PostgreSQL hands back parsed JSON (a stored JSON string comes
   * back as a JS string and must not be parsed again); SQLite hands back the text.
   */
  fromJson<T = unknown>(value: unknown): T {
    if (value === null || value === undefined || this.backend === "postgres") return value as T;
    return (typeof value === "string" ? JSON.parse(value) : value) as T;
  }

  /** Value read from a timestamp column, as RFC 3339 UTC with milliseconds. */
  fromTimestamp(value: unknown): string {
    if (value instanceof Date) return value.toISOString();
    return new Date(String(value)).toISOString();
  }

  isUniqueViolation(err: unknown): boolean {
    const e = err as { code?: string };
    return (
      e?.code === "23505" ||
      e?.code === "SQLITE_CONSTRAINT_UNIQUE" ||
      e?.code === "SQLITE_CONSTRAINT_PRIMARYKEY"
    );
  }

  isForeignKeyViolation(err: unknown): boolean {
    const e = err as { code?: string };
    return e?.code === "23503" || e?.code === "SQLITE_CONSTRAINT_FOREIGNKEY";
  }
}
