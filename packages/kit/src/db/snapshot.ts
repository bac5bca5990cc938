import { mkdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import SQLite from "better-sqlite3";
import type { Backend } from "./dialect.js";

export const PG_DUMP_NOTE =
  'The PostgreSQL database is not in this archive: dump it alongside, e.g. pg_dump --format=custom --file=db.dump "$DATABASE_URL", and restore it with pg_restore --clean --if-exists --no-owner --dbname="$DATABASE_URL" db.dump.';

const SQLITE_SIDE_FILES = ["-wal", "-shm", "-journal"];

export interface DatabaseSnapshot {
  /** Files (relative to the data folder) of the live database, which the archive must not copy as they are. */
  liveFiles: Set<string>;
  /** What the archive holds of the database: the snapshot files written under the staging folder. */
  database: { included: true; files: string[] } | { included: false; note: string };
}

/**
 * The database's part of a backup. SQLite: each file copied by SQLite's online backup into
 * `staging` (one read snapshot, which concurrent writers never restart). PostgreSQL: nothing;
 * the archive names pg_dump instead.
 */
export async function snapshotDatabase(
  spec: { backend: Backend; sqliteFiles: readonly string[] },
  dataDir: string,
  staging: string,
): Promise<DatabaseSnapshot> {
  const liveFiles = new Set<string>();
  if (spec.backend === "postgres") return { liveFiles, database: { included: false, note: PG_DUMP_NOTE } };
  const files: string[] = [];
  for (const rel of spec.sqliteFiles) {
    for (const suffix of ["", ...SQLITE_SIDE_FILES]) liveFiles.add(`${rel}${suffix}`);
    const src = join(dataDir, rel);
    if (!(await stat(src).catch(() => null))) continue;
    const dest = join(staging, rel);
    await mkdir(dirname(dest), { recursive: true });
    const db = new SQLite(src, { readonly: true, fileMustExist: true });
    try {
      db.pragma("busy_timeout = 5000");
      // All pages in one step: one read snapshot, which concurrent writers never restart.
      await db.backup(dest, { progress: () => 0x7fffffff });
    } finally {
      db.close();
    }
    files.push(rel);
  }
  return { liveFiles, database: { included: true, files } };
}
