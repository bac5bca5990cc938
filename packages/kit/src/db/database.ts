import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import SQLite from "better-sqlite3";
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  PostgresDialect,
  SqliteDialect,
  type SqliteDialectConfig,
  SqliteDriver,
} from "kysely";
import pg from "pg";
import { DbBusyError } from "../errors.js";
import { type Backend, Dialect } from "./dialect.js";
import { checksumOf, type MigrateResult, type Migration, plan } from "./migrator.js";
import { createLocalNotifier, createPgNotifier, type Notifier } from "./notifier.js";
import { mapDatabaseError, OutageMonitor } from "./outage.js";
import { PREPARED_MARK } from "./prepared.js";
import {
  Checkpointer,
  type CheckpointStats,
  type DurabilityError,
  WalSync,
  type WalSyncStats,
} from "./sqlite-durability.js";

export { DurabilityError } from "./sqlite-durability.js";

export interface DatabaseOptions {
  /** `postgres://…` selects PostgreSQL; unset means SQLite at `sqliteFile`. */
  url?: string | undefined;
  sqliteFile?: string;
  /** How long a caller may wait for a connection before DbBusyError (→ 503). DESIGN.md: 5 s. */
  acquireTimeoutMs?: number;
  /** PostgreSQL pool size. */
  poolSize?: number;
  /**
   * PostgreSQL `plan_cache_mode` of every connection (default `force_custom_plan`: named
   * statements are planned on every run, as the feed's array-bound queries need). `auto` lets a
   * named statement keep a generic plan when it costs no more than a custom one (key lookups).
   */
  planCacheMode?: "force_custom_plan" | "auto";
  /**
   * Hears a fatal error once (SQLite: a failed fsync of the write-ahead log), and one warn line
   * when the database becomes unreachable and one when it answers again.
   */
  logger?: {
    error(obj: object, msg: string): void;
    warn?(obj: object, msg: string): void;
    info?(obj: object, msg: string): void;
  };
  /** Time source of the outage monitor's recovery rule (tests pass a fake one). */
  now?: () => number;
  /**
   * SQLite: syncs the write-ahead log to disk before writes are acknowledged (default: fdatasync
   * of `<file>-wal` on the libuv threadpool). Tests inject one they control.
   */
  sqliteSync?: () => Promise<void>;
  /**
   * SQLite: checkpoint from a worker thread (default) once this many writes committed, instead of
   * SQLite's auto-checkpoint on the committing connection. Small databases (tests, CLIs) never
   * start the thread. `false` keeps the auto-checkpoint.
   */
  sqliteCheckpointAfter?: number | false;
  /** The shortest pause between that worker's checkpoints (default 50 ms; it adapts to ~1000 frames each). */
  sqliteCheckpointIntervalMs?: number;
  /** WAL frames after which a checkpoint waits for the writes so that the WAL starts over (default 2000). */
  sqliteCheckpointRestartFrames?: number;
}

/** SQLite durability counters (null on PostgreSQL and for `:memory:`). */
export interface DurabilityStats {
  /** Writes that waited for the WAL sync (commits and autocommit writes), and the syncs run. */
  sync: Readonly<WalSyncStats>;
  /** Checkpoints run by the worker thread (zeros until it started). */
  checkpoints: Readonly<CheckpointStats>;
  /** Whether the worker thread checkpoints (false: SQLite's auto-checkpoint does). */
  readonly checkpointWorker: boolean;
  /** A WAL sync failed: every write fails until the process restarts (`/readyz` reports it). */
  readonly failed: boolean;
}

/** Connection waits since the database was opened (live counters, read by /metrics). */
export interface PoolStats {
  /** Acquires that had to wait because every connection was taken. */
  waits: number;
  /** Total seconds those acquires waited. */
  waitSeconds: number;
  /** Waits that gave up (DbBusyError, 503). */
  timeouts: number;
}

export interface Database<DB> {
  readonly backend: Backend;
  /** Pool waits of `db` (the reader never waits). */
  readonly poolStats: Readonly<PoolStats>;
  readonly dialect: Dialect;
  readonly db: Kysely<DB>;
  /**
   * Reads that must not queue (hot request paths). SQLite: a separate read-only connection in WAL
   * mode with cached prepared statements and no mutex, so a read never waits behind another read
   * or an open write transaction; it sees the last committed state. PostgreSQL: the same pool as
   * `db`. Never write through it, and do not use it for read-modify-write logic (use `writeTx`).
   */
  readonly reader: Kysely<DB>;
  /**
   * One write transaction. SQLite: `BEGIN IMMEDIATE` (excludes every other writer, also in other
   * processes). PostgreSQL: READ COMMITTED; take row locks with dialect.forShare/forUpdate.
   * Inside `fn` use only `trx`.
   */
  writeTx<T>(fn: (trx: Kysely<DB>) => Promise<T>): Promise<T>;
  /**
   * `writeTx` that resolves once the transaction COMMITTED, with `durable` resolving once it is
   * on disk (rejecting with DurabilityError if the sync failed). Committed means visible to
   * every reader and kept through a process crash; only a power loss before the sync can lose
   * it. For writes nobody is told about before `durable`, e.g. a row that only hands work to
   * this process. SQLite file databases sync the WAL on the threadpool (sqlite-durability.ts);
   * on PostgreSQL and `:memory:` committed is durable (`durable` is already resolved).
   */
  writeTxCommitted<T>(fn: (trx: Kysely<DB>) => Promise<T>): Promise<{ value: T; durable: Promise<void> }>;
  migrate(
    migrations: readonly Migration[],
    opts?: { onApplied?: (m: Migration) => void },
  ): Promise<MigrateResult>;
  readonly notifier: Notifier;
  /**
   * Whether the database answers: statements that fail because it cannot be reached throw
   * DatabaseUnavailableError (503 `database_unavailable`), and the outage is logged once.
   */
  readonly outage: OutageMonitor;
  /** SQLite file databases: how writes were made durable. Null otherwise. */
  readonly durability: DurabilityStats | null;
  close(): Promise<void>;
}

const newPoolStats = (): PoolStats => ({ waits: 0, waitSeconds: 0, timeouts: 0 });

function countWait(stats: PoolStats, t0: number, timedOut: boolean): void {
  stats.waits += 1;
  stats.waitSeconds += (performance.now() - t0) / 1000;
  if (timedOut) stats.timeouts += 1;
}

/**
 * Which writes on the write connection committed since it was acquired. Statements report to it
 * (see trackedStatement); the driver reads it when the connection is released.
 */
class CommitTracker {
  /** A statement that may write ran, and its transaction (or autocommit) has not ended. */
  private wrote = false;
  /** A write committed since the connection was acquired. */
  private committed = false;
  constructor(
    private readonly raw: SQLite.Database,
    readonly sync: WalSync,
    private readonly onCommit: () => void,
  ) {}

  /** Before a statement: once durability is lost, nothing may be written any more. */
  check(readonly: boolean): void {
    if (!readonly && this.sync.failure) throw this.sync.failure;
  }

  /** After a statement: COMMIT, or an autocommit write, ends what was written. */
  ran(readonly: boolean): void {
    if (!readonly) this.wrote = true;
    if (this.wrote && !this.raw.inTransaction) {
      this.wrote = false;
      this.committed = true;
      this.onCommit();
    }
  }

  take(): boolean {
    const c = this.committed;
    this.committed = false;
    return c;
  }

  /**
   * The holder takes the sync of what it committed into its own hands: the release then hands
   * the connection on without waiting (see writeTxCommitted).
   */
  syncLater(): Promise<void> {
    if (!this.take()) return Promise.resolve();
    const durable = this.sync.durable();
    // The caller may await it later or never (a fatal sync also fails every later write).
    durable.catch(() => {});
    return durable;
  }
}

class TimedSqliteDriver extends SqliteDriver {
  /** Acquires not yet released: more than zero means the one connection is taken. */
  private holders = 0;
  constructor(
    config: SqliteDialectConfig,
    private readonly timeoutMs: number,
    private readonly stats: PoolStats,
    private readonly tracker: CommitTracker | null,
  ) {
    super(config);
  }

  /**
   * The connection is handed on first, then the caller waits for the WAL sync of what it
   * committed: the next transaction runs meanwhile and shares the next sync.
   */
  override async releaseConnection(): Promise<void> {
    this.holders -= 1;
    const committed = this.tracker?.take() ?? false;
    await super.releaseConnection();
    if (committed) await this.tracker?.sync.durable();
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    const waits = this.holders > 0;
    this.holders += 1;
    // A free connection is handed over at once: no wait to bound, so no timer and no race (this
    // runs for every statement outside a transaction and for every transaction).
    if (!waits) return super.acquireConnection();
    const t0 = performance.now();
    const pending = super.acquireConnection();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new DbBusyError()), this.timeoutMs);
    });
    try {
      const conn = await Promise.race([pending, timeout]);
      countWait(this.stats, t0, false);
      return conn;
    } catch (err) {
      // The wait gave up; when the connection does come, hand it straight back.
      if (err instanceof DbBusyError) {
        countWait(this.stats, t0, true);
        pending.then(() => this.releaseConnection()).catch(() => {});
      }
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }
}

class TimedSqliteDialect extends SqliteDialect {
  constructor(
    private readonly cfg: SqliteDialectConfig,
    private readonly timeoutMs: number,
    private readonly stats: PoolStats,
    private readonly tracker: CommitTracker | null,
  ) {
    super(cfg);
  }
  override createDriver() {
    return new TimedSqliteDriver(this.cfg, this.timeoutMs, this.stats, this.tracker);
  }
}

/** Prepared statements kept per connection, least recently used dropped past the bound. */
const STATEMENT_CACHE = 256;

function cachedPrepare(raw: SQLite.Database): (sqlText: string) => SQLite.Statement {
  const cache = new Map<string, SQLite.Statement>();
  return (sqlText) => {
    let stmt = cache.get(sqlText);
    if (stmt) {
      // Map order is insertion order: re-insert to mark it recently used.
      cache.delete(sqlText);
    } else {
      stmt = raw.prepare(sqlText);
      if (cache.size >= STATEMENT_CACHE) {
        const oldest = cache.keys().next().value;
        if (oldest !== undefined) cache.delete(oldest);
      }
    }
    cache.set(sqlText, stmt);
    return stmt;
  };
}

/**
 * The parts of a statement Kysely's SQLite connection uses, reporting writes to `tracker` and
 * I/O failures to `outage` (as DatabaseUnavailableError).
 */
function trackedStatement(
  stmt: SQLite.Statement,
  sqlText: string,
  tracker: CommitTracker | null,
  outage: OutageMonitor,
) {
  // sqlite3_stmt_readonly is false for anything that may write, and for BEGIN IMMEDIATE, which
  // writes nothing itself: a transaction that only read needs no sync.
  const readonly = stmt.readonly || /^\s*begin\b/i.test(sqlText);
  const tracked =
    <T>(exec: (params: unknown[]) => T) =>
    (params: unknown[]): T => {
      tracker?.check(readonly);
      try {
        const result = exec(params);
        if (outage.down) outage.succeeded();
        return result;
      } catch (err) {
        throw failedStatement(err, outage);
      } finally {
        tracker?.ran(readonly);
      }
    };
  return {
    reader: stmt.reader,
    all: tracked((params) => stmt.all(params)),
    run: tracked((params) => stmt.run(params)),
    iterate: (params: unknown[]) => stmt.iterate(params),
  };
}

/** A statement failed: unavailable errors become DatabaseUnavailableError and start an outage. */
function failedStatement(err: unknown, outage: OutageMonitor): unknown {
  const mapped = mapDatabaseError(err);
  if (mapped !== err && (mapped as { code?: unknown }).code === "database_unavailable") outage.failed(err);
  return mapped;
}

/** The shape Kysely's SQLite dialect wants, with statements cached per SQL text. */
function cachingSqlite(raw: SQLite.Database, tracker: CommitTracker | null, outage: OutageMonitor) {
  const prepareRaw = cachedPrepare(raw);
  // One wrapper per cached statement, kept as long as the statement is.
  const wrappers = new WeakMap<SQLite.Statement, ReturnType<typeof trackedStatement>>();
  const prepare = (sqlText: string) => {
    let stmt: SQLite.Statement;
    try {
      stmt = prepareRaw(sqlText);
    } catch (err) {
      throw failedStatement(err, outage);
    }
    let w = wrappers.get(stmt);
    if (!w) {
      w = trackedStatement(stmt, sqlText, tracker, outage);
      wrappers.set(stmt, w);
    }
    return w;
  };
  return { prepare, close: () => raw.close() } as unknown as SQLite.Database;
}

/**
 * Read-only connection without Kysely's connection mutex: better-sqlite3 runs each statement to
 * completion synchronously, so statements cannot interleave, and this connection never holds a
 * transaction open across an await.
 */
class SqliteReadConnection implements DatabaseConnection {
  private readonly prepare: (sqlText: string) => SQLite.Statement;
  constructor(
    raw: SQLite.Database,
    private readonly outage: OutageMonitor,
  ) {
    this.prepare = cachedPrepare(raw);
  }
  async executeQuery<R>(q: CompiledQuery): Promise<{ rows: R[] }> {
    let stmt: SQLite.Statement;
    let rows: R[];
    try {
      stmt = this.prepare(q.sql);
      if (!stmt.reader) throw new Error("the reader connection only runs queries that return rows");
      rows = stmt.all(q.parameters as unknown[]) as R[];
    } catch (err) {
      throw failedStatement(err, this.outage);
    }
    return { rows };
  }
  // biome-ignore lint/correctness/useYield: streaming is not offered on the read path
  async *streamQuery<R>(): AsyncIterableIterator<{ rows: R[] }> {
    throw new Error("streaming is not supported on the reader connection");
  }
}

class SqliteReadDriver implements Driver {
  private readonly conn: SqliteReadConnection;
  constructor(
    private readonly raw: SQLite.Database,
    outage: OutageMonitor,
  ) {
    this.conn = new SqliteReadConnection(raw, outage);
  }
  async init() {}
  async acquireConnection() {
    return this.conn;
  }
  async beginTransaction(): Promise<void> {
    throw new Error("the reader connection takes no transactions; use writeTx");
  }
  async commitTransaction() {}
  async rollbackTransaction() {}
  async releaseConnection() {}
  async destroy() {
    if (this.raw.open) this.raw.close();
  }
}

class SqliteReadDialect extends SqliteDialect {
  constructor(
    private readonly raw: SQLite.Database,
    private readonly outage: OutageMonitor,
  ) {
    super({ database: raw as never });
  }
  override createDriver() {
    return new SqliteReadDriver(this.raw, this.outage);
  }
}

// A write transaction's own statements, compiled once (group commits open one per batch).
const BEGIN_IMMEDIATE = CompiledQuery.raw("BEGIN IMMEDIATE");
const COMMIT = CompiledQuery.raw("COMMIT");
const ROLLBACK = CompiledQuery.raw("ROLLBACK");

const wrappedClients = new WeakSet<pg.PoolClient>();

/**
 * Promise-style queries (Kysely's) go through pg's callback form, so a connection failure comes
 * back as DatabaseUnavailableError without a second promise per query. Statements compiled by
 * `preparedQuery` (they start with PREPARED_MARK) go out as named prepared statements: the server
 * parses and plans them once per connection instead of on every call. The name is a hash of the
 * text, so the same text has the same name on every connection.
 */
function wrapQuery(client: pg.PoolClient, names: Map<string, string>, outage: OutageMonitor): void {
  if (wrappedClients.has(client)) return;
  wrappedClients.add(client);
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (text: unknown, values?: unknown, cb?: unknown) => {
    // Cursors, config objects and callback calls are passed through unchanged.
    if (typeof text !== "string" || typeof values === "function" || cb !== undefined)
      return cb === undefined ? query(text, values) : query(text, values, cb);
    let config: unknown = text;
    if (text.startsWith(PREPARED_MARK)) {
      let name = names.get(text);
      if (!name) {
        name = `kq_${createHash("sha1").update(text).digest("hex").slice(0, 20)}`;
        names.set(text, name);
      }
      config = { name, text, values };
    }
    return new Promise((resolve, reject) => {
      const done = (err: Error | null, result: unknown) => {
        if (err) return reject(failedStatement(err, outage));
        if (outage.down) outage.succeeded();
        resolve(result);
      };
      if (typeof config === "string") query(config, values, done);
      else query(config, done);
    });
  };
}

/**
 * A pool whose acquire timeout surfaces as DbBusyError, counting waits, and whose connection
 * failures surface as DatabaseUnavailableError.
 */
class BusyMappingPool extends pg.Pool {
  readonly stats = newPoolStats();
  private readonly statementNames = new Map<string, string>();
  constructor(
    private readonly outage: OutageMonitor,
    config: pg.PoolConfig,
  ) {
    super(config);
  }
  override connect(): Promise<pg.PoolClient>;
  override connect(
    cb: (
      err: Error | undefined,
      client: pg.PoolClient | undefined,
      done: (release?: unknown) => void,
    ) => void,
  ): void;
  override connect(
    cb?: (
      err: Error | undefined,
      client: pg.PoolClient | undefined,
      done: (release?: unknown) => void,
    ) => void,
  ) {
    if (cb) return super.connect(cb as never);
    const waits = this.idleCount === 0 && this.totalCount >= (this.options.max ?? 10);
    const t0 = performance.now();
    return super.connect().then(
      (client) => {
        if (waits) countWait(this.stats, t0, false);
        wrapQuery(client, this.statementNames, this.outage);
        return client;
      },
      (err: Error) => {
        if (/timeout exceeded when trying to connect/i.test(err.message)) {
          countWait(this.stats, t0, true);
          throw new DbBusyError();
        }
        throw failedStatement(err, this.outage);
      },
    );
  }
}

const PG_TYPE_PARSERS: Record<number, (v: string) => unknown> = {
  20: (v) => Number(v), // int8: counts and byte sizes fit in 2^53
  1700: (v) => Number(v), // numeric
  1184: (v) => new Date(v).toISOString(), // timestamptz → RFC 3339 UTC with ms
  1114: (v) => new Date(`${v.replace(" ", "T")}Z`).toISOString(),
};

export function openSqlite(file: string): SQLite.Database {
  if (file !== ":memory:") mkdirSync(dirname(file), { recursive: true });
  const raw = new SQLite(file);
  raw.pragma("journal_mode = WAL");
  // Commits do not fsync on the event loop; the kit syncs the WAL before acknowledging a write
  // (sqlite-durability.ts). NORMAL in WAL mode never corrupts the database.
  raw.pragma("synchronous = NORMAL");
  raw.pragma("foreign_keys = ON");
  raw.pragma("busy_timeout = 5000");
  return raw;
}

export function openDatabase<DB>(opts: DatabaseOptions): Database<DB> {
  const timeoutMs = opts.acquireTimeoutMs ?? 5000;
  if (opts.url)
    return openPostgres<DB>(
      opts.url,
      timeoutMs,
      opts.poolSize ?? 10,
      opts.planCacheMode ?? "force_custom_plan",
      new OutageMonitor(outageLogger(opts), opts.now),
      migrationLogger(opts),
    );
  if (!opts.sqliteFile) throw new Error("openDatabase needs url or sqliteFile");
  return openSqliteDatabase<DB>(opts.sqliteFile, timeoutMs, opts);
}

/** The WAL sync and the checkpoint worker of one SQLite file database. */
function sqliteDurability(
  raw: SQLite.Database,
  file: string,
  opts: DatabaseOptions,
  exclusive: (fn: () => Promise<void>) => Promise<void>,
) {
  const log = (err: DurabilityError, cause: unknown) => {
    // The error code only: fs messages can carry the file's path.
    const obj = { code: err.code, syscall: (cause as { syscall?: unknown })?.syscall };
    if (opts.logger) opts.logger.error(obj, err.message);
    else console.error(err.message);
  };
  const sync = new WalSync(`${file}-wal`, {
    ...(opts.sqliteSync ? { sync: opts.sqliteSync } : {}),
    onFatal: log,
  });
  const after = opts.sqliteCheckpointAfter ?? 256;
  let checkpointer: Checkpointer | null = null;
  let worker = false;
  const idle: CheckpointStats = { checkpoints: 0, frames: 0, ms: 0, restarts: 0 };
  const stats: DurabilityStats = {
    sync: sync.stats,
    get checkpoints() {
      return checkpointer?.stats ?? idle;
    },
    get checkpointWorker() {
      return worker;
    },
    get failed() {
      return sync.failure !== null;
    },
  };
  const startCheckpointer = () => {
    if (after === false || checkpointer || sync.stats.waits < after) return;
    checkpointer = new Checkpointer(file, {
      ...(opts.sqliteCheckpointIntervalMs ? { intervalMs: opts.sqliteCheckpointIntervalMs } : {}),
      ...(opts.sqliteCheckpointRestartFrames ? { restartFrames: opts.sqliteCheckpointRestartFrames } : {}),
      exclusive,
      onFailure: (err) => {
        // Back to SQLite's own checkpoints (on the committing connection) rather than a WAL
        // that grows without bound.
        worker = false;
        if (raw.open) raw.pragma("wal_autocheckpoint = 1000");
        const code = (err as { code?: unknown })?.code;
        opts.logger?.error({ code }, "SQLite checkpoint worker failed; checkpoints run on the main thread");
      },
    });
    worker = true;
    raw.pragma("wal_autocheckpoint = 0");
  };
  return {
    sync,
    stats,
    /** Called after each write made durable: starts the worker once enough writes came. */
    startCheckpointer,
    close: async () => {
      await sync.close();
      await checkpointer?.stop();
    },
  };
}

/** Every service logs each migration it applies, the same way. */
function migrationLogger(opts: { logger?: DatabaseOptions["logger"] }) {
  return (m: Migration) =>
    opts.logger?.info?.({ migration: m.version, migration_name: m.name }, "migration applied");
}

function outageLogger(opts: { logger?: DatabaseOptions["logger"] }) {
  const l = opts.logger;
  return l?.warn ? { warn: l.warn.bind(l) } : undefined;
}

function openSqliteDatabase<DB>(file: string, timeoutMs: number, opts: DatabaseOptions): Database<DB> {
  const raw = openSqlite(file);
  const outage = new OutageMonitor(outageLogger(opts), opts.now);
  const logApplied = migrationLogger(opts);
  const poolStats = newPoolStats();
  // Runs `fn` holding the write connection (the checkpointer's WAL restart); `db` is set below.
  let db: Kysely<DB> | null = null;
  const exclusive = async (fn: () => Promise<void>) => {
    await db?.connection().execute(fn);
  };
  const durable = file === ":memory:" ? null : sqliteDurability(raw, file, opts, exclusive);
  const tracker = durable ? new CommitTracker(raw, durable.sync, durable.startCheckpointer) : null;
  db = new Kysely<DB>({
    dialect: new TimedSqliteDialect(
      { database: cachingSqlite(raw, tracker, outage) },
      timeoutMs,
      poolStats,
      tracker,
    ),
  });
  // An in-memory database cannot be shared between connections: reads go through `db` then.
  let reader = db;
  let readRaw: SQLite.Database | null = null;
  if (file !== ":memory:") {
    readRaw = new SQLite(file, { readonly: true, fileMustExist: true });
    readRaw.pragma("busy_timeout = 5000");
    reader = new Kysely<DB>({ dialect: new SqliteReadDialect(readRaw, outage) });
  }
  const dialect = new Dialect("sqlite");
  const notifier = createLocalNotifier();
  const writeTxCommitted = async <T>(fn: (trx: Kysely<DB>) => Promise<T>) => {
    let durable: Promise<void> = Promise.resolve();
    const value = await db.connection().execute(async (conn) => {
      await conn.executeQuery(BEGIN_IMMEDIATE);
      try {
        const result = await fn(conn);
        await conn.executeQuery(COMMIT);
        durable = tracker?.syncLater() ?? durable;
        return result;
      } catch (err) {
        if (raw.inTransaction) await conn.executeQuery(ROLLBACK).catch(() => {});
        throw err;
      }
    });
    return { value, durable };
  };
  return {
    backend: "sqlite",
    poolStats,
    dialect,
    db,
    reader,
    notifier,
    outage,
    durability: durable?.stats ?? null,
    writeTx: async (fn) => {
      const { value, durable } = await writeTxCommitted(fn);
      await durable;
      return value;
    },
    writeTxCommitted,
    migrate: async (migrations, mopts) => {
      const result = await db.connection().execute(async () => {
        if (durable?.sync.failure) throw durable.sync.failure;
        raw.exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL)",
        );
        const applied = raw
          .prepare("SELECT version, name, checksum FROM schema_migrations ORDER BY version")
          .all() as {
          version: number;
          name: string;
          checksum: string;
        }[];
        const pending = plan(migrations, applied);
        const insert = raw.prepare(
          "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
        );
        for (const m of pending) {
          const text = typeof m.sql === "string" ? m.sql : m.sql.sqlite;
          raw.exec("BEGIN IMMEDIATE");
          try {
            raw.exec(dialect.renderSql(text));
            insert.run(m.version, m.name, checksumOf(m), new Date().toISOString());
            raw.exec("COMMIT");
          } catch (err) {
            raw.exec("ROLLBACK");
            throw err;
          }
          logApplied(m);
          mopts?.onApplied?.(m);
        }
        return { applied: pending.map((m) => m.version), current: migrations.length };
      });
      // The migrator commits through the raw connection, so it waits for the WAL sync itself.
      if (durable && result.applied.length > 0) await durable.sync.durable();
      return result;
    },
    close: async () => {
      await notifier.close();
      if (reader !== db) await reader.destroy();
      if (readRaw?.open) readRaw.close();
      await db.destroy();
      // Kysely only closes what it initialised; the migrator may have been the only user.
      if (raw.open) raw.close();
      // Last: the checkpoint worker truncates the WAL once the other connections are closed.
      await durable?.close();
    },
  };
}

function openPostgres<DB>(
  url: string,
  timeoutMs: number,
  poolSize: number,
  planCacheMode: "force_custom_plan" | "auto",
  outage: OutageMonitor,
  logApplied: (m: Migration) => void,
): Database<DB> {
  const types = {
    getTypeParser: ((oid: number, format?: "text" | "binary") =>
      PG_TYPE_PARSERS[oid] ?? pg.types.getTypeParser(oid, format as "text")) as typeof pg.types.getTypeParser,
  };
  const pool = new BusyMappingPool(outage, {
    connectionString: url,
    max: poolSize,
    connectionTimeoutMillis: timeoutMs,
    types,
    // Named statements (preparedQuery) switch to a generic plan after five runs; for the gallery
    // feed's array-bound queries that plan was several times slower (kit README). Plan per run,
    // keep the saved parse, unless the caller's statements are known to do well on generic plans.
    options: `-c plan_cache_mode=${planCacheMode === "auto" ? "auto" : "force_custom_plan"}`,
  });
  // No connection error may crash the process (an 'error' event without a listener throws): an
  // idle client's error reaches the pool's listener, a checked-out client's its own. Either
  // starts an outage; a new connection is evidence the server answers again.
  pool.on("error", (err) => outage.failed(err));
  pool.on("connect", (client) => {
    client.on("error", (err) => outage.failed(err));
    outage.succeeded();
  });
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool }) });
  const dialect = new Dialect("postgres");
  const notifier = createPgNotifier(url, pool, outage);
  return {
    backend: "postgres",
    poolStats: pool.stats,
    dialect,
    db,
    reader: db,
    notifier,
    // PostgreSQL's COMMIT waits for its own WAL flush on the server, off this event loop.
    outage,
    durability: null,
    writeTx: (fn) => db.transaction().execute(fn),
    // The server's COMMIT returned after its own WAL flush: committed is durable.
    writeTxCommitted: async (fn) => ({
      value: await db.transaction().execute(fn),
      durable: Promise.resolve(),
    }),
    migrate: async (migrations, mopts) => {
      const client = await pool.connect();
      try {
        // Two processes starting at once: the second waits here, then finds nothing pending.
        await client.query("SELECT pg_advisory_lock(hashtext('schema_migrations'))");
        await client.query(
          "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)",
        );
        const applied = (
          await client.query("SELECT version, name, checksum FROM schema_migrations ORDER BY version")
        ).rows;
        const pending = plan(migrations, applied);
        for (const m of pending) {
          const text = typeof m.sql === "string" ? m.sql : m.sql.postgres;
          await client.query("BEGIN");
          try {
            await client.query(dialect.renderSql(text));
            await client.query(
              "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES ($1, $2, $3, now())",
              [m.version, m.name, checksumOf(m)],
            );
            await client.query("COMMIT");
          } catch (err) {
            await client.query("ROLLBACK");
            throw err;
          }
          logApplied(m);
          mopts?.onApplied?.(m);
        }
        return { applied: pending.map((m) => m.version), current: migrations.length };
      } finally {
        await client.query("SELECT pg_advisory_unlock(hashtext('schema_migrations'))").catch(() => {});
        client.release();
      }
    },
    close: async () => {
      await notifier.close();
      await db.destroy();
      // Kysely only ends the pool if it was initialised; the migrator may have been the only user.
      if (!pool.ending) await pool.end();
    },
  };
}
