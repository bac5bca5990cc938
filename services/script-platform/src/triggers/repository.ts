import type { Dialect, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import type { TriggerKind } from "../db/schema-triggers.js";
import type { Trigger, TriggerDetail } from "./model.js";

/** SQL of the triggers and trigger_details tables. */

const COLUMNS = [
  "t.id",
  "t.app_id",
  "t.kind",
  "t.script_id",
  "t.enabled",
  "t.registered_by_principal",
  "t.retry",
  "t.created_at",
  "d.collection_pattern",
  "d.operations",
  "d.topic_pattern",
  "d.cron_schedule",
  "d.cron_timezone",
  "d.cron_next_due_at",
  "d.cron_last_fired_at",
  "d.email_inbound_secret_enc",
] as const;

function selectTriggers(db: Kysely<PlatformDB>) {
  return db
    .selectFrom("triggers as t")
    .innerJoin("trigger_details as d", "d.trigger_id", "t.id")
    .select(COLUMNS);
}

type Row = Awaited<ReturnType<ReturnType<typeof selectTriggers>["executeTakeFirstOrThrow"]>>;

function toTrigger(dialect: Dialect, r: Row): Trigger {
  return {
    id: r.id,
    app_id: r.app_id,
    kind: r.kind,
    script_id: r.script_id,
    enabled: Number(r.enabled) === 1,
    registered_by_principal: dialect.fromJson(r.registered_by_principal),
    retry: dialect.fromJson(r.retry) ?? null,
    created_at: dialect.fromTimestamp(r.created_at),
    detail: {
      collection_pattern: r.collection_pattern,
      operations: dialect.fromJson<string[] | null>(r.operations) ?? null,
      topic_pattern: r.topic_pattern,
      cron_schedule: r.cron_schedule,
      cron_timezone: r.cron_timezone,
      cron_next_due_at: r.cron_next_due_at === null ? null : dialect.fromTimestamp(r.cron_next_due_at),
      cron_last_fired_at: r.cron_last_fired_at === null ? null : dialect.fromTimestamp(r.cron_last_fired_at),
      email_inbound_secret_enc: r.email_inbound_secret_enc,
    },
  };
}

export async function insertTrigger(db: Kysely<PlatformDB>, dialect: Dialect, t: Trigger): Promise<void> {
  await db
    .insertInto("triggers")
    .values({
      id: t.id,
      app_id: t.app_id,
      kind: t.kind,
      script_id: t.script_id,
      enabled: t.enabled ? 1 : 0,
      registered_by_principal: dialect.json(t.registered_by_principal),
      retry: t.retry === null ? null : dialect.json(t.retry),
      created_at: t.created_at,
    })
    .execute();
  const d: TriggerDetail = t.detail;
  await db
    .insertInto("trigger_details")
    .values({
      trigger_id: t.id,
      collection_pattern: d.collection_pattern,
      operations: d.operations === null ? null : dialect.json(d.operations),
      topic_pattern: d.topic_pattern,
      cron_schedule: d.cron_schedule,
      cron_timezone: d.cron_timezone,
      cron_next_due_at: d.cron_next_due_at,
      cron_last_fired_at: d.cron_last_fired_at,
      email_inbound_secret_enc: d.email_inbound_secret_enc,
    })
    .execute();
}

export async function findTrigger(
  db: Kysely<PlatformDB>,
  dialect: Dialect,
  appId: string,
  id: string,
): Promise<Trigger | null> {
  const r = await selectTriggers(db).where("t.app_id", "=", appId).where("t.id", "=", id).executeTakeFirst();
  return r ? toTrigger(dialect, r) : null;
}

export async function findTriggerById(
  db: Kysely<PlatformDB>,
  dialect: Dialect,
  id: string,
): Promise<Trigger | null> {
  const r = await selectTriggers(db).where("t.id", "=", id).executeTakeFirst();
  return r ? toTrigger(dialect, r) : null;
}

/** Triggers of an app, oldest first; `after` is the last id of the previous page. */
export async function listTriggers(
  db: Kysely<PlatformDB>,
  dialect: Dialect,
  appId: string,
  opts: { after?: string | undefined; limit: number },
): Promise<Trigger[]> {
  let q = selectTriggers(db).where("t.app_id", "=", appId);
  if (opts.after) q = q.where("t.id", ">", opts.after);
  const rows = await q.orderBy("t.id").limit(opts.limit).execute();
  return rows.map((r) => toTrigger(dialect, r));
}

/** Enabled triggers of one kind in an app (candidates for an event; patterns are matched in TS). */
export async function enabledTriggersOfKind(
  db: Kysely<PlatformDB>,
  dialect: Dialect,
  appId: string,
  kind: TriggerKind,
): Promise<Trigger[]> {
  const rows = await selectTriggers(db)
    .where("t.app_id", "=", appId)
    .where("t.kind", "=", kind)
    .where("t.enabled", "=", 1)
    .orderBy("t.id")
    .execute();
  return rows.map((r) => toTrigger(dialect, r));
}

export async function setTriggerEnabled(
  db: Kysely<PlatformDB>,
  appId: string,
  id: string,
  enabled: boolean,
): Promise<boolean> {
  const res = await db
    .updateTable("triggers")
    .set({ enabled: enabled ? 1 : 0 })
    .where("app_id", "=", appId)
    .where("id", "=", id)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function setCronNextDue(
  db: Kysely<PlatformDB>,
  id: string,
  nextDueAt: string | null,
): Promise<void> {
  await db
    .updateTable("trigger_details")
    .set({ cron_next_due_at: nextDueAt })
    .where("trigger_id", "=", id)
    .execute();
}

export async function deleteTrigger(db: Kysely<PlatformDB>, appId: string, id: string): Promise<boolean> {
  // trigger_details goes with it (ON DELETE CASCADE); deleted explicitly too so the result does not
  // depend on foreign-key enforcement.
  const t = await db
    .selectFrom("triggers")
    .select("id")
    .where("app_id", "=", appId)
    .where("id", "=", id)
    .executeTakeFirst();
  if (!t) return false;
  await db.deleteFrom("trigger_details").where("trigger_id", "=", id).execute();
  await db.deleteFrom("triggers").where("id", "=", id).execute();
  return true;
}

const dueCron = (db: Kysely<PlatformDB>, now: string) =>
  db
    .selectFrom("trigger_details as d")
    .innerJoin("triggers as t", "t.id", "d.trigger_id")
    .where("t.kind", "=", "cron")
    .where("t.enabled", "=", 1)
    .where("d.cron_next_due_at", "is not", null)
    .where("d.cron_next_due_at", "<=", now);

/** Whether any enabled cron trigger is due (a read: the common "nothing due" takes no write lock). */
export async function anyCronDue(db: Kysely<PlatformDB>, now: string): Promise<boolean> {
  return (await dueCron(db, now).select("d.trigger_id").limit(1).executeTakeFirst()) !== undefined;
}

export interface DueCron {
  id: string;
  app_id: string;
  script_id: string;
  principal: unknown;
  schedule: string;
  timezone: string;
  /** The window that came due (RFC 3339). */
  scheduled_at: string | null;
}

/**
 * Due cron triggers, oldest window first, locked for this transaction; rows other transactions
 * hold are skipped (several instances on one PostgreSQL never fire the same window twice).
 */
export async function claimDueCron(
  trx: Kysely<PlatformDB>,
  dialect: Dialect,
  now: string,
  limit: number,
): Promise<DueCron[]> {
  const rows = await dialect
    .forUpdateSkipLocked(
      dueCron(trx, now)
        .select([
          "t.id",
          "t.app_id",
          "t.script_id",
          "t.registered_by_principal",
          "d.cron_schedule",
          "d.cron_timezone",
          "d.cron_next_due_at",
        ])
        .orderBy("d.cron_next_due_at")
        .limit(limit),
    )
    .execute();
  return rows.map((t) => ({
    id: t.id,
    app_id: t.app_id,
    script_id: t.script_id,
    principal: dialect.fromJson(t.registered_by_principal),
    schedule: t.cron_schedule ?? "",
    timezone: t.cron_timezone ?? "UTC",
    scheduled_at: t.cron_next_due_at === null ? null : dialect.fromTimestamp(t.cron_next_due_at),
  }));
}

export async function markCronFired(
  trx: Kysely<PlatformDB>,
  id: string,
  firedAt: string,
  nextDueAt: string | null,
): Promise<void> {
  await trx
    .updateTable("trigger_details")
    .set({ cron_last_fired_at: firedAt, cron_next_due_at: nextDueAt })
    .where("trigger_id", "=", id)
    .execute();
}
