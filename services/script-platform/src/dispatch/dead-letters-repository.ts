import type { Dialect, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import type { DeadLetterResolution } from "../db/schema-triggers.js";

/** SQL of dead_letters and dead_letter_handlers. */

export interface DeadLetter {
  id: string;
  app_id: string;
  trigger_id: string | null;
  script_id: string;
  source_kind: string;
  /** The outbox payload as JSON text (kept verbatim for replay). */
  payload: string;
  principal: string | null;
  depth: number;
  error: { kind: string; message: string };
  attempts: number;
  execution_id: string | null;
  created_at: string;
  resolved_at: string | null;
  resolution: DeadLetterResolution | null;
}

export async function insertDeadLetter(
  trx: Kysely<PlatformDB>,
  dialect: Dialect,
  dl: DeadLetter,
): Promise<void> {
  await trx
    .insertInto("dead_letters")
    .values({ ...dl, error: dialect.json(dl.error) })
    .execute();
}

function toDeadLetter(dialect: Dialect, r: Record<string, unknown>): DeadLetter {
  return {
    id: String(r.id),
    app_id: String(r.app_id),
    trigger_id: (r.trigger_id as string | null) ?? null,
    script_id: String(r.script_id),
    source_kind: String(r.source_kind),
    payload: String(r.payload),
    principal: (r.principal as string | null) ?? null,
    depth: Number(r.depth),
    error: dialect.fromJson(r.error),
    attempts: Number(r.attempts),
    execution_id: (r.execution_id as string | null) ?? null,
    created_at: dialect.fromTimestamp(r.created_at),
    resolved_at: r.resolved_at === null ? null : dialect.fromTimestamp(r.resolved_at),
    resolution: (r.resolution as DeadLetterResolution | null) ?? null,
  };
}

export async function findDeadLetter(
  db: Kysely<PlatformDB>,
  dialect: Dialect,
  appId: string,
  id: string,
): Promise<DeadLetter | null> {
  const r = await db
    .selectFrom("dead_letters")
    .selectAll()
    .where("app_id", "=", appId)
    .where("id", "=", id)
    .executeTakeFirst();
  return r ? toDeadLetter(dialect, r) : null;
}

/** Newest first; `before` is the last id of the previous page. */
export async function listDeadLetters(
  db: Kysely<PlatformDB>,
  dialect: Dialect,
  appId: string,
  opts: { status: "unresolved" | "resolved" | undefined; before: string | undefined; limit: number },
): Promise<DeadLetter[]> {
  let q = db.selectFrom("dead_letters").selectAll().where("app_id", "=", appId);
  if (opts.status === "unresolved") q = q.where("resolution", "is", null);
  if (opts.status === "resolved") q = q.where("resolution", "is not", null);
  if (opts.before) q = q.where("id", "<", opts.before);
  const rows = await q.orderBy("id", "desc").limit(opts.limit).execute();
  return rows.map((r) => toDeadLetter(dialect, r));
}

export async function resolveDeadLetter(
  trx: Kysely<PlatformDB>,
  id: string,
  resolution: DeadLetterResolution,
  at: string,
): Promise<void> {
  await trx.updateTable("dead_letters").set({ resolution, resolved_at: at }).where("id", "=", id).execute();
}

export async function insertHandler(
  trx: Kysely<PlatformDB>,
  outboxId: string,
  deadLetterId: string,
): Promise<void> {
  await trx
    .insertInto("dead_letter_handlers")
    .values({ outbox_id: outboxId, dead_letter_id: deadLetterId, status: "pending" })
    .execute();
}

export async function findHandler(trx: Kysely<PlatformDB>, outboxId: string) {
  return trx
    .selectFrom("dead_letter_handlers")
    .selectAll()
    .where("outbox_id", "=", outboxId)
    .executeTakeFirst();
}

export async function setHandlerStatus(
  trx: Kysely<PlatformDB>,
  outboxId: string,
  status: "succeeded" | "failed",
): Promise<void> {
  await trx.updateTable("dead_letter_handlers").set({ status }).where("outbox_id", "=", outboxId).execute();
}

/**
 * Pending handlers whose outbox row is gone finished successfully: a failing handler is marked
 * `failed` by the failure policy in the same transaction that removes its row.
 */
export async function markVanishedHandlersSucceeded(trx: Kysely<PlatformDB>): Promise<void> {
  await trx
    .updateTable("dead_letter_handlers")
    .set({ status: "succeeded" })
    .where("status", "=", "pending")
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom("outbox")
            .select("outbox.id")
            .whereRef("outbox.id", "=", "dead_letter_handlers.outbox_id"),
        ),
      ),
    )
    .execute();
}

/** Unresolved dead letters that have handlers, none of them still pending, with the outcome. */
export async function settledHandlerOutcomes(
  trx: Kysely<PlatformDB>,
): Promise<{ dead_letter_id: string; failed: number }[]> {
  const rows = await trx
    .selectFrom("dead_letter_handlers as h")
    .innerJoin("dead_letters as d", "d.id", "h.dead_letter_id")
    .where("d.resolution", "is", null)
    .select((eb) => [
      "h.dead_letter_id",
      eb.fn.sum<number>(eb.case().when("h.status", "=", "pending").then(1).else(0).end()).as("pending"),
      eb.fn.sum<number>(eb.case().when("h.status", "=", "failed").then(1).else(0).end()).as("failed"),
    ])
    .groupBy("h.dead_letter_id")
    .execute();
  return rows
    .filter((r) => Number(r.pending) === 0)
    .map((r) => ({ dead_letter_id: r.dead_letter_id, failed: Number(r.failed) }));
}

export async function deleteResolvedBefore(trx: Kysely<PlatformDB>, before: string): Promise<number> {
  const res = await trx
    .deleteFrom("dead_letters")
    .where("resolved_at", "is not", null)
    .where("resolved_at", "<", before)
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** The resolution of a dead letter (null: unresolved); undefined when it does not exist. */
export async function resolutionOf(
  trx: Kysely<PlatformDB>,
  id: string,
): Promise<DeadLetterResolution | null | undefined> {
  const r = await trx.selectFrom("dead_letters").select("resolution").where("id", "=", id).executeTakeFirst();
  return r ? ((r.resolution as DeadLetterResolution | null) ?? null) : undefined;
}

/** Whether any dead_letter handler run is still pending (a read, no write lock). */
export async function anyPendingHandler(db: Kysely<PlatformDB>): Promise<boolean> {
  const r = await db
    .selectFrom("dead_letter_handlers")
    .select("outbox_id")
    .where("status", "=", "pending")
    .limit(1)
    .executeTakeFirst();
  return r !== undefined;
}

/** Locks one dead letter of the app for the transaction; false when it does not exist. */
export async function lockDeadLetter(
  trx: Kysely<PlatformDB>,
  dialect: Dialect,
  appId: string,
  id: string,
): Promise<boolean> {
  const r = await dialect
    .forUpdate(trx.selectFrom("dead_letters").select("id").where("app_id", "=", appId).where("id", "=", id))
    .executeTakeFirst();
  return r !== undefined;
}
