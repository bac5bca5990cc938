import { compiledPerRowCount, type Kysely, sql } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import type { OutboxTable } from "../db/schema-data.js";

/**
 * SQL of the outbox rows the dispatch capability writes besides the runtime's own (outbox.ts):
 * triggered runs, dead-letter replays and retries, and the NOTIFY that announces them.
 */

/** NOTIFY channel that wakes dispatchers of other processes (PostgreSQL) when rows are enqueued. */
export const OUTBOX_CHANNEL = "platform_outbox";

export type NewOutboxRow = Pick<
  OutboxTable,
  | "id"
  | "app_id"
  | "source_kind"
  | "trigger_id"
  | "script_id"
  | "payload"
  | "due_at"
  | "principal"
  | "created_at"
> & {
  depth: number;
  /** Set for a row written already claimed by the process that will run it (PostgreSQL). */
  claimed_by?: string | null;
  lease_until?: string | null;
};

/** Rows in chunks of one multi-row statement each (a publish batch writes many at once). */
export async function insertOutboxRows(
  trx: Kysely<PlatformDB>,
  rows: readonly NewOutboxRow[],
): Promise<void> {
  // 10 columns a row: 500 rows stay well under SQLite's 32766 and PostgreSQL's 65535 parameters.
  for (let i = 0; i < rows.length; i += 500)
    await trx
      .insertInto("outbox")
      .values(rows.slice(i, i + 500).map((row) => ({ ...row, reply_to: null })))
      .execute();
}

/** Columns of a row in the order insertOutboxRowsAndNotify binds them. */
const NEW_ROW_COLUMNS = [
  "id",
  "app_id",
  "source_kind",
  "trigger_id",
  "script_id",
  "payload",
  "due_at",
  "principal",
  "created_at",
  "depth",
  "claimed_by",
  "lease_until",
] as const satisfies readonly (keyof NewOutboxRow)[];
const TEMPLATE_ROW: NewOutboxRow = {
  id: "",
  app_id: "",
  source_kind: "pubsub",
  trigger_id: null,
  script_id: "",
  payload: "",
  due_at: "",
  principal: null,
  created_at: "",
  depth: 0,
  claimed_by: null,
  lease_until: null,
};
/**
 * PostgreSQL: the rows and their NOTIFY in one statement (one round trip instead of two); the
 * NOTIFY is still delivered at COMMIT only. Up to 500 rows (see insertOutboxRows). With `notify`
 * false the rows only (each is claimed by the process that wrote it: nobody needs waking).
 * Compiled once per row count (one cache per writer) and sent as a prepared statement: no query
 * building, no server-side parse per batch.
 */
export function insertOutboxRowsAndNotify() {
  const statement = (notify: boolean) =>
    compiledPerRowCount<PlatformDB>(
      (trx, n) => {
        const values = Array.from({ length: n }, () => ({ ...TEMPLATE_ROW, reply_to: null }));
        return notify
          ? trx
              .with("inserted", (q) => q.insertInto("outbox").values(values))
              .selectNoFrom(sql<string>`pg_notify(${OUTBOX_CHANNEL}, '')`.as("notified"))
          : trx.insertInto("outbox").values(values);
      },
      // Each row binds its NEW_ROW_COLUMNS and reply_to (null), then comes the channel name.
      (n) => n * (NEW_ROW_COLUMNS.length + 1) + (notify ? 1 : 0),
      { prepared: true },
    );
  const withNotify = statement(true);
  const rowsOnly = statement(false);
  return async (trx: Kysely<PlatformDB>, rows: readonly NewOutboxRow[], notify = true): Promise<void> => {
    if (rows.length === 0) return;
    const compiled = (notify ? withNotify : rowsOnly)(trx, rows.length);
    const parameters: unknown[] = [];
    for (const row of rows) {
      for (const c of NEW_ROW_COLUMNS) parameters.push(row[c] ?? null);
      parameters.push(null);
    }
    if (notify) parameters.push(OUTBOX_CHANNEL);
    await trx.executeQuery({ ...compiled, parameters });
  };
}

/** Inside a transaction: delivered to every listening process at COMMIT, never on rollback. */
export async function notifyOutbox(trx: Kysely<PlatformDB>): Promise<void> {
  await sql`SELECT pg_notify(${OUTBOX_CHANNEL}, '')`.execute(trx);
}

/** The columns the failure policy reads of a failed row; null when it is gone. */
export async function failedOutboxRow(trx: Kysely<PlatformDB>, id: string) {
  const r = await trx
    .selectFrom("outbox")
    .select(["source_kind", "payload", "principal", "depth"])
    .where("id", "=", id)
    .executeTakeFirst();
  return r ? { ...r, depth: Number(r.depth) } : null;
}

/** A retry: the row becomes due again at `dueAt` with `attempts` counted. */
export async function rescheduleOutboxRow(
  trx: Kysely<PlatformDB>,
  id: string,
  dueAt: string,
  attempts: number,
): Promise<void> {
  await trx.updateTable("outbox").set({ due_at: dueAt, attempts }).where("id", "=", id).execute();
}
