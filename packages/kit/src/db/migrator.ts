import { createHash } from "node:crypto";
import { type Kysely, sql } from "kysely";

/**
 * A numbered migration. `sql` is run as one script inside one transaction after `{{type}}`
 * tokens are rendered for the backend (see Dialect.renderSql). Where the dialects truly differ,
 * give `{sqlite, postgres}` instead. Never edit a shipped migration: its checksum is recorded.
 */
export interface Migration {
  version: number;
  name: string;
  sql: string | { sqlite: string; postgres: string };
}

export interface MigrateResult {
  applied: number[];
  current: number;
}

export class MigrationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "MigrationError";
  }
}

export function checksumOf(m: Migration): string {
  const text = typeof m.sql === "string" ? m.sql : `${m.sql.sqlite}\n--postgres--\n${m.sql.postgres}`;
  return createHash("sha256").update(text).digest("hex");
}

/** Versions must be 1..N in order: a gap or a duplicate is refused before anything runs. */
export function checkSequence(migrations: readonly Migration[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== i + 1) {
      throw new MigrationError(
        `migration ${String(m.version).padStart(3, "0")} (${m.name}) is out of sequence: expected version ${i + 1}`,
      );
    }
  });
}

export interface AppliedRow {
  version: number;
  name: string;
  checksum: string;
}

/** `SELECT 1`: rejects when the database does not answer. */
export async function ping<DB>(db: Kysely<DB>): Promise<void> {
  await sql`SELECT 1`.execute(db);
}

/** The migrations the database records as applied; rejects when it has no migration table yet. */
export async function appliedMigrations<DB>(db: Kysely<DB>): Promise<AppliedRow[]> {
  return (await sql<AppliedRow>`SELECT version, name, checksum FROM schema_migrations`.execute(db)).rows;
}

/** Compare what the database has applied with what the code ships; returns what is pending. */
export function plan(migrations: readonly Migration[], applied: readonly AppliedRow[]): Migration[] {
  checkSequence(migrations);
  const byVersion = new Map(migrations.map((m) => [m.version, m]));
  for (const row of applied) {
    const m = byVersion.get(Number(row.version));
    if (!m) {
      throw new MigrationError(
        `the database has migration ${row.version} (${row.name}) which this code does not know: the schema is newer than the code`,
      );
    }
    if (checksumOf(m) !== row.checksum) {
      throw new MigrationError(
        `migration ${String(m.version).padStart(3, "0")} (${m.name}) was edited after it was applied; shipped migrations must not change`,
      );
    }
  }
  const done = new Set(applied.map((r) => Number(r.version)));
  return migrations.filter((m) => !done.has(m.version));
}
