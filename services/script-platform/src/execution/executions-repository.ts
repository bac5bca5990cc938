import {
  compiledPerRowCount,
  type Database,
  type Insertable,
  type Kysely,
  multiRowStatement,
  type Selectable,
} from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import type { MergedWrite } from "../dispatch/group-commit.js";
import type { ExecutionRecord, RunError } from "../dispatch/job.js";
import type { LogEntry } from "../sandbox/engine.js";

// The record's shape is part of the dispatcher's job contract (dispatch/job.ts).
export type { ExecutionRecord, RunError } from "../dispatch/job.js";

/** Filters of the executions list and live tail (contract "Authoring"). */
export interface ExecutionFilters {
  script_id?: string | null | undefined;
  status?: ExecutionStatus | null | undefined;
  invocation_type?: string | null | undefined;
  /** RFC 3339: runs started at or after. */
  since?: string | null | undefined;
}

/** Error codes that count as `limit` (a sandbox limit ended the run). */
export const LIMIT_CODES = ["operation_limit", "size_limit", "call_depth_limit", "sdk_limit"];

/** The status records, the filter and the stream share (contract: `ok|error|timeout|limit`). */
export type ExecutionStatus = "ok" | "error" | "timeout" | "limit";
export const EXECUTION_STATUSES = ["ok", "error", "timeout", "limit"] as const;

/**
 * The public status of a stored run. The log stores `succeeded | failed` plus the error code (the
 * settle path writes it, and the metrics count by it); the filter below reads the same two columns.
 */
export function executionStatus(stored: string, errorCode: string | null | undefined): ExecutionStatus {
  if (stored === "succeeded") return "ok";
  if (errorCode === "timeout") return "timeout";
  if (errorCode && LIMIT_CODES.includes(errorCode)) return "limit";
  return "error";
}

// biome-ignore lint/suspicious/noExplicitAny: one filter helper for selects on the executions table
function filtered<Q extends { where: (...a: any[]) => Q }>(q: Q, f: ExecutionFilters): Q {
  let out = q;
  if (f.script_id) out = out.where("script_id", "=", f.script_id);
  if (f.invocation_type) out = out.where("invocation_type", "=", f.invocation_type);
  if (f.since) out = out.where("created_at", ">=", f.since);
  // Each case selects exactly the rows executionStatus() names so.
  switch (f.status) {
    case "ok":
      out = out.where("status", "=", "succeeded");
      break;
    case "timeout":
      out = out.where("status", "=", "failed").where("error_code", "=", "timeout");
      break;
    case "limit":
      out = out.where("status", "=", "failed").where("error_code", "in", LIMIT_CODES);
      break;
    case "error":
      out = out
        .where("status", "=", "failed")
        // biome-ignore lint/suspicious/noExplicitAny: Kysely expression builder
        .where((eb: any) =>
          eb.or([eb("error_code", "is", null), eb("error_code", "not in", ["timeout", ...LIMIT_CODES])]),
        );
      break;
  }
  return out;
}

type ExecutionRow = Insertable<PlatformDB["executions"]>;

/** Columns of a record in the order the multi-row insert binds them. */
const COLUMNS = [
  "id",
  "app_id",
  "script_id",
  "invocation_type",
  "status",
  "duration_ms",
  "logs",
  "error",
  "created_at",
  "finished_at",
  "error_code",
  "error_stack",
  "error_line",
  "error_column",
  "instance_id",
] as const satisfies readonly (keyof ExecutionRow)[];

const TEMPLATE: Required<ExecutionRow> = {
  id: "",
  app_id: "",
  script_id: "",
  invocation_type: "",
  status: "",
  duration_ms: 0,
  logs: "",
  error: null,
  created_at: "",
  finished_at: null,
  error_code: null,
  error_stack: null,
  error_line: null,
  error_column: null,
  instance_id: null,
};

function toRow(e: ExecutionRecord): Required<ExecutionRow> {
  return {
    id: e.id,
    app_id: e.app_id,
    script_id: e.script_id,
    invocation_type: e.invocation_type,
    status: e.status,
    duration_ms: e.duration_ms,
    logs: JSON.stringify(e.logs),
    error: e.error ? JSON.stringify({ code: e.error.code, message: e.error.message }) : null,
    created_at: e.created_at,
    finished_at: e.finished_at,
    error_code: e.error?.code ?? null,
    error_stack: e.error?.stack ?? null,
    error_line: e.error?.line ?? null,
    error_column: e.error?.column ?? null,
    instance_id: e.instance_id,
  };
}

interface Settled {
  row: Required<ExecutionRow>;
  outboxId: string;
}

/** SQL of the executions log (and the settle that writes a record as it deletes its outbox row). */
export function executionsRepo(database: Database<PlatformDB>) {
  const d = database.dialect;
  // A record id is written once; a settle retried after an unclear failure must not fail on it.
  // Compiled per database: another app in the process may speak another SQL dialect.
  const insertRows = multiRowStatement<ExecutionRow, PlatformDB>(COLUMNS, (trx, n) =>
    trx
      .insertInto("executions")
      .values(Array.from({ length: n }, () => TEMPLATE))
      .onConflict((oc) => oc.column("id").doNothing()),
  );
  // A settle's two writes (the record in, its outbox row out). On PostgreSQL one statement (a
  // data-modifying CTE), compiled once per row count: the group commit then needs no transaction.
  const settleStatement = compiledPerRowCount<PlatformDB>(
    (trx, n) =>
      trx
        .with("settled", (q) =>
          q
            .deleteFrom("outbox")
            .where(
              "id",
              "in",
              Array.from({ length: n }, () => ""),
            )
            .returning("id"),
        )
        .insertInto("executions")
        .values(Array.from({ length: n }, () => TEMPLATE))
        .onConflict((oc) => oc.column("id").doNothing()),
    // Each row's outbox id, then its record's columns.
    (n) => n * (COLUMNS.length + 1),
    { prepared: true },
  );
  // SQLite's settle: the delete compiled once per row count too (building it per batch showed in
  // the main thread's profile under the hello load).
  const deleteOutboxRows = multiRowStatement<Settled, PlatformDB>(["outboxId"], (trx, n) =>
    trx.deleteFrom("outbox").where(
      "id",
      "in",
      Array.from({ length: n }, () => ""),
    ),
  );
  const settleRows = async (trx: Kysely<PlatformDB>, items: Settled[]): Promise<void> => {
    if (d.backend !== "postgres") {
      await insertRows(
        trx,
        items.map((i) => i.row),
      );
      await deleteOutboxRows(trx, items);
      return;
    }
    const parameters: unknown[] = items.map((i) => i.outboxId);
    for (const { row } of items) for (const c of COLUMNS) parameters.push(row[c]);
    await trx.executeQuery({ ...settleStatement(trx, items.length), parameters });
  };
  const toView = (r: Selectable<PlatformDB["executions"]>) => ({
    id: r.id,
    app_id: r.app_id,
    script_id: r.script_id,
    invocation_type: r.invocation_type,
    status: executionStatus(r.status, r.error_code),
    duration_ms: r.duration_ms,
    logs: JSON.parse(r.logs) as LogEntry[],
    error: errorOf(r),
    instance_id: r.instance_id ?? null,
    created_at: d.fromTimestamp(r.created_at),
    finished_at: r.finished_at === null ? null : d.fromTimestamp(r.finished_at),
  });
  return {
    /** Runs that finished at or after `sinceIso` (oldest first), for the live tail; at most `limit`. */
    async listFinishedSince(appId: string, sinceIso: string, f: ExecutionFilters, limit: number) {
      const q = database.db
        .selectFrom("executions")
        .selectAll()
        .where("app_id", "=", appId)
        .where("finished_at", ">=", sinceIso)
        .orderBy("finished_at", "asc")
        .orderBy("id", "asc")
        .limit(limit);
      return (await filtered(q, f).execute()).map(toView);
    },
    async finishedAtOf(appId: string, id: string): Promise<string | null> {
      const r = await database.db
        .selectFrom("executions")
        .select("finished_at")
        .where("app_id", "=", appId)
        .where("id", "=", id)
        .executeTakeFirst();
      return r?.finished_at ? d.fromTimestamp(r.finished_at) : null;
    },
    async insert(db: Kysely<PlatformDB>, e: ExecutionRecord): Promise<void> {
      await insertRows(db, [toRow(e)]);
    },
    /**
     * Group-commit write of a settled run: its record in and its outbox row `outboxId` out, merged
     * with the batch's other settles (one statement on PostgreSQL, two on SQLite).
     */
    settleWrite(e: ExecutionRecord, outboxId: string): MergedWrite<Settled> {
      return {
        kind: "executions.settle",
        data: { row: toRow(e), outboxId },
        apply: settleRows,
        oneStatement: true,
      };
    },
    /** Group-commit write: the record goes in with the other records of its batch (one statement). */
    insertWrite(e: ExecutionRecord): MergedWrite<ExecutionRow> {
      return { kind: "executions.insert", data: toRow(e), apply: insertRows };
    },
    /** Drop log entries older than `beforeIso` (the log is bounded by age). */
    async prune(beforeIso: string): Promise<number> {
      const r = await database.db
        .deleteFrom("executions")
        .where("created_at", "<", beforeIso)
        .executeTakeFirst();
      return Number(r.numDeletedRows);
    },
    /** Newest first (ids are UUID v7, so id order is start order); `before` is the cursor. */
    async list(appId: string, opts: { before?: string | null; limit: number } & ExecutionFilters) {
      let q = database.db
        .selectFrom("executions")
        .selectAll()
        .where("app_id", "=", appId)
        .orderBy("id", "desc")
        .limit(opts.limit + 1);
      if (opts.before) q = q.where("id", "<", opts.before);
      q = filtered(q, opts);
      const rows = await q.execute();
      const page = rows.slice(0, opts.limit).map(toView);
      return {
        items: page,
        next_cursor: rows.length > opts.limit ? (page[page.length - 1]?.id ?? null) : null,
      };
    },
  };
}
export type ExecutionsRepo = ReturnType<typeof executionsRepo>;

/** The structured error of a row; rows written before migration 0005 carry {kind, message} only. */
function errorOf(r: {
  error: string | null;
  error_code?: string | null;
  error_stack?: string | null;
  error_line?: number | null;
  error_column?: number | null;
}): RunError | null {
  if (!r.error) return null;
  const j = JSON.parse(r.error) as { code?: string; kind?: string; message?: string };
  return {
    code: r.error_code ?? j.code ?? j.kind ?? "internal_error",
    message: j.message ?? "",
    stack: r.error_stack ?? null,
    line: r.error_line === undefined || r.error_line === null ? null : Number(r.error_line),
    column: r.error_column === undefined || r.error_column === null ? null : Number(r.error_column),
  };
}
