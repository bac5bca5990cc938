import { createHash, randomBytes } from "node:crypto";
import { createReadStream, type Dirent } from "node:fs";
import { copyFile, link, mkdir, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { basename, dirname, join, relative, resolve, sep } from "node:path";
import * as tar from "tar";
import { PG_DUMP_NOTE, snapshotDatabase } from "./db/snapshot.js";

/**
 * One-command backup and restore of a service's DATA_DIR (the common contract, "Running and
 * operating"): `backup --to FILE` writes a `.tar` or `.tar.gz` while the service runs, `restore
 * --from FILE` fills an empty DATA_DIR.
 *
 * Consistency while writes go on: the SQLite database is copied first, with SQLite's online
 * backup API in one step (a read snapshot: WAL writers are not blocked and the copy is a
 * committed state), then every other file is hard-linked into a staging folder (files are written
 * to a temp name and renamed into place, so a link keeps the bytes as they were) and hashed there.
 * A file is always on disk before the row that names it commits, so every row in the copied
 * database finds its file; files newer than the copy are harmless extras.
 */

export interface BackupSpec {
  /** The service's package name, e.g. `event-gallery`: a restore refuses another service's archive. */
  service: string;
  version: string;
  dataDir: string;
  /** `postgres`: the database is not in the archive (pg_dump it); `sqlite`: `sqliteFiles` are. */
  backend: "sqlite" | "postgres";
  /** SQLite database files, relative to dataDir. */
  sqliteFiles: readonly string[];
}

export interface ManifestFile {
  path: string;
  size: number;
  sha256: string;
}

export interface BackupManifest {
  format: 1;
  service: string;
  version: string;
  created_at: string;
  node: string;
  backend: "sqlite" | "postgres";
  /** What the archive holds of the database. */
  database: { included: true; files: string[] } | { included: false; note: string };
  files: ManifestFile[];
}

export const MANIFEST_NAME = "backup-manifest.json";

/** A refusal or failure stated in one line for the operator (the CLI prints it, exit 1). */
export class BackupError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BackupError";
  }
}

/** Files a writer has not renamed into place yet, and staging folders of other backups/restores. */
const isTransient = (name: string) =>
  name.startsWith(".tmp-") || name.endsWith(".tmp") || name.startsWith(".backup-");

export { PG_DUMP_NOTE };

async function sha256(file: string): Promise<string> {
  const h = createHash("sha256");
  for await (const chunk of createReadStream(file)) h.update(chunk as Buffer);
  return h.digest("hex");
}

async function walk(root: string, skip: (rel: string, e: Dirent) => boolean): Promise<string[]> {
  const out: string[] = [];
  const visit = async (dir: string) => {
    let entries: Dirent[];
    try {
      entries = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      // A folder removed while we walk (an export pruned) is simply not in the backup.
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
      throw err;
    }
    for (const e of entries) {
      const abs = join(dir, e.name);
      const rel = relative(root, abs).split(sep).join("/");
      if (skip(rel, e)) continue;
      if (e.isDirectory()) await visit(abs);
      else if (e.isFile()) out.push(rel);
    }
  };
  await visit(root);
  return out.sort();
}

/** Hard link (same file system) or copy `src` to `dest`; false when the source vanished meanwhile. */
async function snapshotFile(src: string, dest: string): Promise<boolean> {
  await mkdir(dirname(dest), { recursive: true });
  try {
    await link(src, dest);
    return true;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return false;
    if (code !== "EXDEV" && code !== "EPERM" && code !== "EMLINK" && code !== "ENOTSUP") throw err;
  }
  try {
    await copyFile(src, dest);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
}

const archiveIsGzip = (file: string) => /\.(tar\.gz|tgz)$/i.test(file);

function checkArchiveName(file: string): void {
  if (!/\.(tar|tar\.gz|tgz)$/i.test(file))
    throw new BackupError(`${basename(file)}: the archive must end in .tar or .tar.gz`);
}

/** Write the backup archive to `to`; returns its manifest. */
export async function createBackup(
  spec: BackupSpec,
  to: string,
  opts: { now?: () => Date } = {},
): Promise<BackupManifest> {
  checkArchiveName(to);
  const dataDir = resolve(spec.dataDir);
  const st = await stat(dataDir).catch(() => null);
  if (!st?.isDirectory())
    throw new BackupError(`DATA_DIR ${spec.dataDir} does not exist: nothing to back up`);
  const target = resolve(to);
  const staging = join(dataDir, `.backup-${randomBytes(6).toString("hex")}`);
  await mkdir(staging);
  try {
    const snapshot = await snapshotDatabase(spec, dataDir, staging);
    const included = snapshot.database.included ? snapshot.database.files : [];
    const targetRel = relative(dataDir, target).split(sep).join("/");
    const files = await walk(dataDir, (rel, e) => {
      if (isTransient(e.name) || snapshot.liveFiles.has(rel) || rel === targetRel) return true;
      return false;
    });
    const manifestFiles: ManifestFile[] = [];
    for (const rel of included) {
      const f = join(staging, rel);
      manifestFiles.push({ path: rel, size: (await stat(f)).size, sha256: await sha256(f) });
    }
    for (const rel of files) {
      const dest = join(staging, rel);
      if (!(await snapshotFile(join(dataDir, rel), dest))) continue;
      manifestFiles.push({ path: rel, size: (await stat(dest)).size, sha256: await sha256(dest) });
    }
    manifestFiles.sort((a, b) => (a.path < b.path ? -1 : 1));
    const manifest: BackupManifest = {
      format: 1,
      service: spec.service,
      version: spec.version,
      created_at: (opts.now?.() ?? new Date()).toISOString(),
      node: process.version,
      backend: spec.backend,
      database: snapshot.database,
      files: manifestFiles,
    };
    await writeFile(join(staging, MANIFEST_NAME), `${JSON.stringify(manifest, null, 2)}\n`);
    const partial = `${target}.partial-${randomBytes(4).toString("hex")}`;
    await mkdir(dirname(target), { recursive: true });
    try {
      await tar.create(
        { file: partial, cwd: staging, gzip: archiveIsGzip(target), portable: true, noDirRecurse: false },
        [MANIFEST_NAME, ...manifestFiles.map((f) => f.path)],
      );
      await rename(partial, target);
    } catch (err) {
      await rm(partial, { force: true });
      throw err;
    }
    return manifest;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

/**
 * Unpack `from` into `dataDir`, which must be empty or missing; every file's size and checksum
 * is checked against the manifest before anything lands in `dataDir`.
 */
export async function restoreBackup(
  spec: { service: string; dataDir: string },
  from: string,
): Promise<BackupManifest> {
  checkArchiveName(from);
  const dataDir = resolve(spec.dataDir);
  const existing = await readdir(dataDir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === "ENOENT") return [];
    throw err;
  });
  if (existing.length > 0)
    throw new BackupError(`DATA_DIR ${spec.dataDir} is not empty: restore only fills an empty DATA_DIR`);
  if (!(await stat(from).catch(() => null))?.isFile()) throw new BackupError(`${from}: no such archive`);
  const staging = `${dataDir}.restore-${randomBytes(6).toString("hex")}`;
  await mkdir(staging, { recursive: true });
  try {
    try {
      await tar.extract({ file: resolve(from), cwd: staging, strict: true, preserveOwner: false });
    } catch {
      throw new BackupError(`${basename(from)} is not a readable backup archive`);
    }
    let manifest: BackupManifest;
    try {
      manifest = JSON.parse(await readFile(join(staging, MANIFEST_NAME), "utf8")) as BackupManifest;
    } catch {
      throw new BackupError(`${basename(from)} has no backup manifest`);
    }
    if (manifest.service !== spec.service)
      throw new BackupError(`${basename(from)} is a backup of ${manifest.service}, not of ${spec.service}`);
    for (const f of manifest.files) {
      const p = join(staging, f.path);
      const size = (await stat(p).catch(() => null))?.size;
      if (size !== f.size || (await sha256(p)) !== f.sha256)
        throw new BackupError(`${basename(from)} is damaged: ${f.path} does not match its checksum`);
    }
    await rm(join(staging, MANIFEST_NAME));
    await mkdir(dataDir, { recursive: true });
    for (const name of await readdir(staging)) await rename(join(staging, name), join(dataDir, name));
    return manifest;
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}

export const BACKUP_USAGE = ["backup --to FILE.tar[.gz]", "restore --from FILE.tar[.gz]"];

/**
 * The `backup` / `restore` subcommands: prints one line on success (exit 0) or one line on a
 * refusal (exit 1). Returns null when argv is not one of them.
 */
export async function runBackupCommand(
  argv: readonly string[],
  spec: BackupSpec,
  io: { out(line: string): void; err(line: string): void } = {
    out: (l) => process.stdout.write(`${l}\n`),
    err: (l) => process.stderr.write(`${l}\n`),
  },
): Promise<number | null> {
  const [cmd, flag, file, ...rest] = argv;
  if (cmd !== "backup" && cmd !== "restore") return null;
  const want = cmd === "backup" ? "--to" : "--from";
  if (flag !== want || !file || rest.length > 0) {
    io.err(`usage: ${cmd} ${want} FILE.tar[.gz]`);
    return 1;
  }
  try {
    if (cmd === "backup") {
      const m = await createBackup(spec, file);
      const bytes = m.files.reduce((n, f) => n + f.size, 0);
      io.out(
        `backup of ${spec.service} ${spec.version} written to ${file}: ${m.files.length} files, ${bytes} bytes`,
      );
      if (!m.database.included) io.out(PG_DUMP_NOTE);
    } else {
      const m = await restoreBackup(spec, file);
      io.out(
        `restored ${m.service} ${m.version} backup of ${m.created_at} into ${spec.dataDir}: ${m.files.length} files, checksums verified`,
      );
      if (!m.database.included) io.out(PG_DUMP_NOTE);
    }
    return 0;
  } catch (err) {
    if (err instanceof BackupError) io.err(err.message);
    else io.err(`${cmd} failed: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    return 1;
  }
}
