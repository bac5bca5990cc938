import { AppError, DbBusyError } from "../errors.js";

/** Seconds a client is asked to wait when the database cannot be reached. */
export const OUTAGE_RETRY_AFTER_S = 5;

/**
 * The database cannot be reached (server down, connection cut, SQLite I/O error): every route
 * answers 503 `database_unavailable` with Retry-After (the common contract). `cause` keeps the
 * driver's error for code that wants it; it never reaches a response.
 */
export class DatabaseUnavailableError extends AppError {
  constructor(cause?: unknown) {
    super(
      503,
      "database_unavailable",
      "The database cannot be reached; try again shortly.",
      { retry_after_s: OUTAGE_RETRY_AFTER_S },
      { "retry-after": String(OUTAGE_RETRY_AFTER_S) },
    );
    this.name = "DatabaseUnavailableError";
    if (cause !== undefined) (this as { cause?: unknown }).cause = cause;
  }
}

const NET_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
]);

/** PostgreSQL SQLSTATEs that mean the server went away or refuses connections for now. */
const PG_GONE = new Set(["57P01", "57P02", "57P03", "53300"]);

const PG_GONE_MESSAGE =
  /Connection terminated|connection error and is not queryable|Client was closed and is not queryable|Connection ended|terminating connection|the database system is (starting up|shutting down)/i;

/**
 * Whether an error means the database itself cannot be used right now (as opposed to a bad
 * query or a constraint): a network error, a connection cut or refused, a server shutting down,
 * or an SQLite I/O error, full disk or unopenable file.
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (err instanceof DatabaseUnavailableError) return true;
  if (!err || typeof err !== "object") return false;
  const e = err as { code?: unknown; message?: unknown; name?: unknown; errors?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  if (code.startsWith("SQLITE_")) return /^SQLITE_(IOERR|CANTOPEN|FULL|NOTADB)/.test(code);
  if (e.name === "DurabilityError") return true;
  if (NET_CODES.has(code) || code.startsWith("08") || PG_GONE.has(code)) return true;
  // Node's AggregateError (IPv4 and IPv6 both refused) carries the causes.
  if (Array.isArray(e.errors) && e.errors.some((x) => isDatabaseUnavailable(x))) return true;
  return typeof e.message === "string" && PG_GONE_MESSAGE.test(e.message);
}

/** The error to throw for a failed statement: unavailable errors become DatabaseUnavailableError. */
export function mapDatabaseError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  // A failed WAL sync keeps its own error (logged once where it happened; /readyz reports it).
  if (!err || typeof err !== "object" || (err as { name?: unknown }).name === "DurabilityError") return err;
  if ((err as { code?: unknown }).code === "SQLITE_BUSY") return new DbBusyError();
  return isDatabaseUnavailable(err) ? new DatabaseUnavailableError(err) : err;
}

export interface OutageLogger {
  warn(obj: object, msg: string): void;
}

/**
 * Tracks whether the database is reachable, so an outage costs one warn line when it starts and
 * one line when it ends, instead of an error per request. `failed` on every unavailable error,
 * `succeeded` on evidence it answers again (a new connection, a statement that ran): it counts as
 * recovered only once no failure came for `quietMs`, so a mix of dying and fresh connections
 * while a server restarts does not log a line per request.
 */
export class OutageMonitor {
  private downSince: number | null = null;
  private lastFailure = 0;
  /** Outages seen since the database was opened. */
  outages = 0;

  constructor(
    private readonly log: OutageLogger | undefined,
    private readonly now: () => number = Date.now,
    private readonly quietMs = 1000,
  ) {}

  get down(): boolean {
    return this.downSince !== null;
  }

  failed(err: unknown): void {
    const t = this.now();
    this.lastFailure = t;
    if (this.downSince !== null) return;
    this.downSince = t;
    this.outages += 1;
    const cause = (err as { cause?: unknown })?.cause ?? err;
    const c = cause as { code?: unknown; message?: unknown };
    // The driver's code and message only: no stack, no query, no connection string.
    const reason = typeof c?.code === "string" && c.code ? c.code : String(c?.message ?? "unknown");
    this.log?.warn({ reason }, "database unavailable: answering 503 database_unavailable until it is back");
  }

  succeeded(): void {
    if (this.downSince === null) return;
    const t = this.now();
    if (t - this.lastFailure < this.quietMs) return;
    const downMs = t - this.downSince;
    this.downSince = null;
    this.log?.warn({ down_ms: downMs }, "database reachable again");
  }
}
