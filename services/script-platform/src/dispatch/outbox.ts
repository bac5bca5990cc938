import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Database, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import type { OutboxTable } from "../db/schema-data.js";
import { MAX_TIMEOUT_SECONDS } from "../sandbox/limits.js";
import { type MergedWrite, multiRowStatement } from "./group-commit.js";
import type { RequestView } from "./job.js";

export type OutboxRow = Omit<
  OutboxTable,
  "execution_id" | "attempts" | "depth" | "claimed_by" | "lease_until"
> & {
  execution_id: string | null;
  attempts: number;
  depth: number;
  claimed_by: string | null;
  lease_until: string | null;
};

/**
 * A claim holds a row for the longest a run may take (the 300 s ceiling) plus a margin; when a
 * process dies mid-run the row becomes claimable again after that.
 */
export const LEASE_MS = (MAX_TIMEOUT_SECONDS + 30) * 1000;
/** A reply row nobody claimed for this long belongs to a process that is gone. */
export const STALE_REPLY_MS = (MAX_TIMEOUT_SECONDS + 2) * 1000;

/** HTTP payload of an outbox row: the request (bytes base64) and the request id. */
export interface HttpPayload {
  request: Omit<RequestView, "body"> & { body: unknown; body_base64?: string };
  request_id: string | null;
}

export function encodeHttpPayload(request: RequestView, requestId: string | null): HttpPayload {
  const { body, ...rest } = request;
  if (body instanceof Uint8Array)
    return {
      request: { ...rest, body: null, body_base64: Buffer.from(body).toString("base64") },
      request_id: requestId,
    };
  return { request: { ...rest, body }, request_id: requestId };
}

export function decodeHttpRequest(p: HttpPayload["request"]): RequestView {
  const { body_base64, body, ...rest } = p;
  return { ...rest, body: body_base64 !== undefined ? Buffer.from(body_base64, "base64") : body };
}

// The group commit lives in group-commit.ts; the dispatcher takes it from here with the outbox's SQL.
export { GroupCommit } from "./group-commit.js";

/** Columns of an outbox row in the order the multi-row insert binds them. */
const OUTBOX_COLUMNS = [
  "id",
  "app_id",
  "source_kind",
  "trigger_id",
  "script_id",
  "execution_id",
  "payload",
  "due_at",
  "attempts",
  "depth",
  "principal",
  "reply_to",
  "claimed_by",
  "lease_until",
  "created_at",
] as const satisfies readonly (keyof OutboxRow)[];

const TEMPLATE_ROW: OutboxRow = {
  id: "",
  app_id: "",
  source_kind: "http",
  trigger_id: null,
  script_id: "",
  execution_id: null,
  payload: "",
  due_at: "",
  attempts: 0,
  depth: 0,
  principal: null,
  reply_to: null,
  claimed_by: null,
  lease_until: null,
  created_at: "",
};

/** SQL of the outbox as the runtime uses it (triggers write their own rows via enqueue.ts). */
export function outboxRepo(database: Database<PlatformDB>, clock: Clock) {
  const d = database.dialect;
  const toRow = (r: Record<string, unknown>): OutboxRow => ({
    ...(r as unknown as OutboxRow),
    attempts: Number(r.attempts),
    depth: Number(r.depth),
    due_at: d.fromTimestamp(r.due_at),
    created_at: d.fromTimestamp(r.created_at),
    lease_until: r.lease_until === null ? null : d.fromTimestamp(r.lease_until),
  });
  const insertRows = multiRowStatement<OutboxRow>(OUTBOX_COLUMNS, (trx, n) =>
    trx.insertInto("outbox").values(Array.from({ length: n }, () => TEMPLATE_ROW)),
  );
  const deleteIds = multiRowStatement<{ id: string }>(["id"], (trx, n) =>
    trx.deleteFrom("outbox").where(
      "id",
      "in",
      Array.from({ length: n }, () => ""),
    ),
  );
  return {
    async insert(trx: Kysely<PlatformDB>, row: OutboxRow): Promise<void> {
      await insertRows(trx, [row]);
    },

    /** Many rows in one statement (the group commit merges concurrent inserts). */
    insertMany: (trx: Kysely<PlatformDB>, rows: OutboxRow[]): Promise<void> => insertRows(trx, rows),

    /** Group-commit write: insert `row` together with the other inserts of its batch. */
    insertWrite(row: OutboxRow): MergedWrite<OutboxRow> {
      return { kind: "outbox.insert", data: row, apply: insertRows };
    },

    /** Group-commit write: delete the settled row `id` together with the batch's other deletes. */
    deleteWrite(id: string): MergedWrite<{ id: string }> {
      return { kind: "outbox.delete", data: { id }, apply: deleteIds };
    },

    /**
     * Claim up to `limit` due rows for `instance`: rows nobody holds (or whose lease ran out),
     * skipping rows other transactions hold (FOR UPDATE SKIP LOCKED on PostgreSQL; on SQLite the
     * write transaction excludes other writers). A reply row is claimed only by the process whose
     * request waits for it, unless that process is evidently gone (the row went stale).
     */
    async claim(trx: Kysely<PlatformDB>, instance: string, limit: number): Promise<OutboxRow[]> {
      const now = clock.now();
      const nowIso = toIso(now);
      const staleIso = toIso(now - STALE_REPLY_MS);
      const q = trx
        .selectFrom("outbox")
        .selectAll()
        .where("due_at", "<=", nowIso)
        .where((eb) => eb.or([eb("lease_until", "is", null), eb("lease_until", "<", nowIso)]))
        .where((eb) =>
          eb.or([
            eb("reply_to", "is", null),
            eb("reply_to", "like", `${instance}/%`),
            eb("lease_until", "is not", null),
            eb("created_at", "<", staleIso),
          ]),
        )
        .orderBy("due_at")
        .limit(limit);
      const rows = (await d.forUpdateSkipLocked(q).execute()).map((r) => toRow(r as Record<string, unknown>));
      if (rows.length === 0) return [];
      const leaseIso = toIso(now + LEASE_MS);
      await trx
        .updateTable("outbox")
        .set({ claimed_by: instance, lease_until: leaseIso })
        .where(
          "id",
          "in",
          rows.map((r) => r.id),
        )
        .execute();
      return rows.map((r) => ({ ...r, claimed_by: instance, lease_until: leaseIso }));
    },

    async delete(trx: Kysely<PlatformDB>, id: string): Promise<void> {
      await trx.deleteFrom("outbox").where("id", "=", id).execute();
    },

    /** After a retry decision: the row waits for its new due time, held by nobody. */
    async release(trx: Kysely<PlatformDB>, id: string): Promise<void> {
      await trx
        .updateTable("outbox")
        .set({ claimed_by: null, lease_until: null })
        .where("id", "=", id)
        .execute();
    },

    async abandoned(
      trx: Kysely<PlatformDB>,
      a: {
        id: string;
        app_id: string;
        script_id: string;
        execution_id: string;
        reply_to: string;
        status: string;
        result: unknown;
      },
    ): Promise<void> {
      await trx
        .insertInto("abandoned_executions")
        .values({ ...a, result: JSON.stringify(a.result ?? null), created_at: clock.iso() })
        .execute();
    },

    /** Earliest due time of a row this instance could claim later (for the next wake-up). */
    async nextDue(): Promise<string | null> {
      const r = await database.db
        .selectFrom("outbox")
        .select((eb) => eb.fn.min("due_at").as("due"))
        .where("lease_until", "is", null)
        .executeTakeFirst();
      return r?.due ? d.fromTimestamp(r.due) : null;
    },
  };
}
export type OutboxRepo = ReturnType<typeof outboxRepo>;
