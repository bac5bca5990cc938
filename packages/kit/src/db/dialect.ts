import type { Kysely, SelectQueryBuilder } from "kysely";

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

  /**
   * Whether other processes may share the database and hear about changes: PostgreSQL, where the
   * notifier (LISTEN/NOTIFY, also NOTIFY inside a transaction, delivered at COMMIT) reaches them.
   * SQLite: one process owns the file, and its notifier stays inside that process.
   */
  get sharedByProcesses(): boolean {
    return this.backend === "postgres";
  }

  /**
   * Whether a write statement may run alone on the pool, outside any transaction, committed and
   * durable once it answers (PostgreSQL autocommit). SQLite: every write goes through writeTx
   * (BEGIN IMMEDIATE; writeTxCommitted tracks when it is on disk).
   */
  get autocommitWrites(): boolean {
    return this.backend === "postgres";
  }

  /**
   * Whether writes through `db` belong to a transaction that commits later. PostgreSQL: only
   * inside a Kysely transaction (the pool autocommits each statement). SQLite: always; writeTx
   * hands out a connection-bound Kysely, which is not a Kysely transaction.
   */
  // biome-ignore lint/suspicious/noExplicitAny: any schema; only the transaction flag is read
  inTransaction(db: Kysely<any>): boolean {
    return !this.autocommitWrites || db.isTransaction;
  }

  /**
   * Whether concurrent reads gain from being grouped into one statement: PostgreSQL answers over
   * the network while other requests arrive. SQLite answers synchronously on the calling thread,
   * so a group never forms there and the single-row statement is cheaper.
   */
  get groupsReads(): boolean {
    return this.backend === "postgres";
  }

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
