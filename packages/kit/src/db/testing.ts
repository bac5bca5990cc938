import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { type Database, openDatabase } from "./database.js";
import type { Backend } from "./dialect.js";
import type { Migration } from "./migrator.js";

/**
 * Test harness: each call gives a fresh, empty database on the backend the run selects
 * (`TEST_BACKEND=postgres` with `DATABASE_URL` pointing at a server the tests may create
 * databases on; SQLite otherwise) plus a fresh data directory.
 */
export function testBackend(): Backend {
  return process.env.TEST_BACKEND === "postgres" ? "postgres" : "sqlite";
}

export interface TestEnv {
  backend: Backend;
  /** A fresh directory for DATA_DIR. */
  dataDir: string;
  /** Set on PostgreSQL: a URL to a fresh database. Unset on SQLite (the app uses DATA_DIR). */
  databaseUrl: string | undefined;
  /** The SQLite file a service would use under dataDir, for direct opening. */
  sqliteFile: string;
  cleanup(): Promise<void>;
}

function adminUrl(): string {
  const url = process.env.DATABASE_URL;
  if (!url)
    throw new Error("TEST_BACKEND=postgres needs DATABASE_URL (a server where tests may create databases)");
  return url;
}

/** A fresh DATA_DIR, and on PostgreSQL a fresh database; `cleanup()` removes both. */
export async function createTestEnv(prefix = "t"): Promise<TestEnv> {
  const dataDir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const backend = testBackend();
  let databaseUrl: string | undefined;
  let dbName: string | undefined;
  if (backend === "postgres") {
    dbName = `${prefix.replace(/[^a-z0-9_]/gi, "_").toLowerCase()}_${randomBytes(6).toString("hex")}`;
    const admin = new pg.Client({ connectionString: adminUrl() });
    await admin.connect();
    try {
      await admin.query(`CREATE DATABASE "${dbName}"`);
    } finally {
      await admin.end();
    }
    const u = new URL(adminUrl());
    u.pathname = `/${dbName}`;
    databaseUrl = u.toString();
  }
  return {
    backend,
    dataDir,
    databaseUrl,
    sqliteFile: join(dataDir, "db.sqlite"),
    async cleanup() {
      rmSync(dataDir, { recursive: true, force: true });
      if (dbName) {
        const admin = new pg.Client({ connectionString: adminUrl() });
        await admin.connect();
        try {
          await admin.query(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`);
        } finally {
          await admin.end();
        }
      }
    },
  };
}

/** A fresh migrated Database on the selected backend. */
export async function createTestDatabase<DB>(
  migrations: readonly Migration[] = [],
  opts: { acquireTimeoutMs?: number; poolSize?: number } = {},
): Promise<{ database: Database<DB>; env: TestEnv; cleanup(): Promise<void> }> {
  const env = await createTestEnv("kdb");
  const database = openDatabase<DB>({
    url: env.databaseUrl,
    sqliteFile: env.sqliteFile,
    ...(opts.acquireTimeoutMs !== undefined ? { acquireTimeoutMs: opts.acquireTimeoutMs } : {}),
    ...(opts.poolSize !== undefined ? { poolSize: opts.poolSize } : {}),
  });
  await database.migrate(migrations);
  return {
    database,
    env,
    async cleanup() {
      await database.close().catch(() => {});
      await env.cleanup();
    },
  };
}
