import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import { type Database, type Kysely, multiRowStatement, preparedQuery } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import type { AbandonedExecutionsTable, OutboxTable } from "../db/schema-data.js";
import { MAX_TIMEOUT_SECONDS } from "../sandbox/limits.js";
import type { MergedWrite } from "./group-commit.js";

/** SQL of the outbox as the runtime uses it (triggers write their own rows via enqueue-repository.ts). */

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
 * Default lease of a claim when nothing renews it: the longest a run may take (the 300 s ceiling)
 * plus a margin. The dispatcher passes a shorter lease (PLATFORM_CLAIM_TAKEOVER_S) and renews it
 * with its heartbeat, so a dead process's rows are taken over within that time.
 */
export const LEASE_MS = (MAX_TIMEOUT_SECONDS + 30) * 1000;
/** A reply row nobody claimed for this long belongs to a process that is gone. */
export const STALE_REPLY_MS = (MAX_TIMEOUT_SECONDS + 2) * 1000;

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

export function outboxRepo(database: Database<PlatformDB>, clock: Clock, leaseMs = LEASE_MS) {
  const d = database.dialect;
  const toRow = (r: Record<string, unknown>): OutboxRow => ({
    ...(r as unknown as OutboxRow),
    attempts: Number(r.attempts),
    depth: Number(r.depth),
    due_at: d.fromTimestamp(r.due_at),
    created_at: d.fromTimestamp(r.created_at),
    lease_until: r.lease_until === null ? null : d.fromTimestamp(r.lease_until),
  });
  const insertRows = multiRowStatement<OutboxRow, PlatformDB>(OUTBOX_COLUMNS, (trx, n) =>
    trx.insertInto("outbox").values(Array.from({ length: n }, () => TEMPLATE_ROW)),
  );
  // The claim runs once per claimed batch: compiled once, a prepared statement on PostgreSQL.
  const claimStatement = preparedQuery(
    (
      db: Kysely<PlatformDB>,
      p: { instance: string; mine: string; now: string; stale: string; lease: string; limit: number },
    ) =>
      db
        .updateTable("outbox")
        .set({ claimed_by: p.instance, lease_until: p.lease })
        .where(
          "id",
          "in",
          d.forUpdateSkipLocked(
            db
              .selectFrom("outbox")
              .select("id")
              .where("due_at", "<=", p.now)
              .where((eb) => eb.or([eb("lease_until", "is", null), eb("lease_until", "<", p.now)]))
              .where((eb) =>
                eb.or([
                  eb("reply_to", "is", null),
                  eb("reply_to", "like", p.mine),
                  eb("lease_until", "is not", null),
                  eb("created_at", "<", p.stale),
                ]),
              )
              .orderBy("due_at")
              .limit(p.limit),
          ),
        )
        .returningAll(),
  );
  const deleteIds = multiRowStatement<{ id: string }, PlatformDB>(["id"], (trx, n) =>
    trx.deleteFrom("outbox").where(
      "id",
      "in",
      Array.from({ length: n }, () => ""),
    ),
  );
  return {
    /** Async HTTP requests of an app still waiting in the outbox (its queue bound). */
    async waitingAsyncHttp(appId: string): Promise<number> {
      const r = await database.db
        .selectFrom("outbox")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("app_id", "=", appId)
        .where("source_kind", "=", "http")
        .where("reply_to", "is", null)
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },

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
     * Claim up to `limit` due rows for `instance` in ONE statement (no transaction of its own:
     * on PostgreSQL one round trip instead of BEGIN/SELECT/UPDATE/COMMIT): rows nobody holds (or
     * whose lease ran out), skipping rows other transactions hold (FOR UPDATE SKIP LOCKED in the
     * subquery on PostgreSQL, re-checked on the locked row; on SQLite the statement excludes other
     * writers). A reply row is claimed only by the process whose request waits for it, unless
     * that process is evidently gone (the row went stale). Oldest due first.
     */
    async claim(db: Kysely<PlatformDB>, instance: string, limit: number): Promise<OutboxRow[]> {
      const now = clock.now();
      const rows = await claimStatement(db, {
        instance,
        mine: `${instance}/%`,
        now: toIso(now),
        stale: toIso(now - STALE_REPLY_MS),
        lease: toIso(now + leaseMs),
        limit,
      });
      return rows
        .map((r) => toRow(r as Record<string, unknown>))
        .sort((x, y) => (x.due_at < y.due_at ? -1 : x.due_at > y.due_at ? 1 : 0));
    },

    /**
     * The heartbeat: every row `instance` holds gets its lease renewed (now + the lease). A
     * process that stops renewing (it died) loses its rows when their lease runs out.
     */
    async renewLeases(db: Kysely<PlatformDB>, instance: string): Promise<void> {
      await db
        .updateTable("outbox")
        .set({ lease_until: toIso(clock.now() + leaseMs) })
        .where("claimed_by", "=", instance)
        .execute();
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

    /**
     * Rows `instance` holds but will not run (it is stopping, or could not start them): anyone's
     * again at once, not after their lease. Only rows it still holds (nothing started them elsewhere).
     */
    async giveBack(db: Kysely<PlatformDB>, instance: string, ids: readonly string[]): Promise<void> {
      if (ids.length === 0) return;
      await db
        .updateTable("outbox")
        .set({ claimed_by: null, lease_until: null })
        .where("id", "in", [...ids])
        .where("claimed_by", "=", instance)
        .execute();
    },

    async abandoned(
      trx: Kysely<PlatformDB>,
      a: Omit<AbandonedExecutionsTable, "result" | "created_at"> & { result: unknown },
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
