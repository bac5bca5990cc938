import type { Database, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import type { LogEntry } from "../sandbox/engine.js";

/**
 * A failed run's error as records and draft runs carry it (contract "Authoring"): `line` and
 * `column` are 1-based in the script's own source. Public callers never see `stack`.
 */
export interface RunError {
  code: string;
  message: string;
  stack: string | null;
  line: number | null;
  column: number | null;
}

export interface ExecutionRecord {
  id: string;
  app_id: string;
  script_id: string;
  invocation_type: string;
  status: "succeeded" | "failed";
  duration_ms: number;
  logs: LogEntry[];
  error: RunError | null;
  /** The process that ran it (scale-out: which instance claimed the row). */
  instance_id: string | null;
  created_at: string;
  finished_at: string;
}

/** SQL of the executions log. */
export function executionsRepo(database: Database<PlatformDB>) {
  const d = database.dialect;
  return {
    async insert(db: Kysely<PlatformDB>, e: ExecutionRecord): Promise<void> {
      await db
        .insertInto("executions")
        .values({
          ...e,
          logs: JSON.stringify(e.logs),
          error: e.error ? JSON.stringify({ code: e.error.code, message: e.error.message }) : null,
          error_code: e.error?.code ?? null,
          error_stack: e.error?.stack ?? null,
          error_line: e.error?.line ?? null,
          error_column: e.error?.column ?? null,
        })
        .onConflict((oc) => oc.column("id").doNothing())
        .execute();
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
    async list(appId: string, opts: { before?: string | null; limit: number; status?: string | null }) {
      let q = database.db
        .selectFrom("executions")
        .selectAll()
        .where("app_id", "=", appId)
        .orderBy("id", "desc")
        .limit(opts.limit + 1);
      if (opts.before) q = q.where("id", "<", opts.before);
      if (opts.status) q = q.where("status", "=", opts.status);
      const rows = await q.execute();
      const page = rows.slice(0, opts.limit).map((r) => ({
        id: r.id,
        app_id: r.app_id,
        script_id: r.script_id,
        invocation_type: r.invocation_type,
        status: r.status,
        duration_ms: r.duration_ms,
        logs: JSON.parse(r.logs) as LogEntry[],
        error: errorOf(r),
        instance_id: r.instance_id ?? null,
        created_at: d.fromTimestamp(r.created_at),
        finished_at: r.finished_at === null ? null : d.fromTimestamp(r.finished_at),
      }));
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
