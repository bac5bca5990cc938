import type { Database, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import type { LogEntry } from "../sandbox/engine.js";

export interface ExecutionRecord {
  id: string;
  app_id: string;
  script_id: string;
  invocation_type: string;
  status: "succeeded" | "failed";
  duration_ms: number;
  logs: LogEntry[];
  error: { kind: string; message: string } | null;
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
        .values({ ...e, logs: JSON.stringify(e.logs), error: e.error ? JSON.stringify(e.error) : null })
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
        error: r.error ? (JSON.parse(r.error) as unknown) : null,
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
