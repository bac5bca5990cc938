import { type Dialect, type Kysely, sql } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { PlatformDB } from "../db/schema.js";
import { triggerRuntime } from "./runtime-config.js";

/** The dispatcher's wake-up channel (dispatch/dispatcher.ts OUTBOX_CHANNEL). */
const OUTBOX_CHANNEL = "platform_outbox";

/**
 * Writes outbox rows for triggered runs (the runtime's dispatcher drains them). Every row runs
 * its script as the principal that registered the trigger (seed: "the dispatcher runs the script
 * as that principal").
 */
export interface TriggeredRun {
  appId: string;
  sourceKind: "kv" | "docs" | "files" | "pubsub" | "cron" | "email" | "dead_letter";
  triggerId: string;
  scriptId: string;
  /** ctx.event as the script sees it, e.g. `{kv: {...}}`. */
  event: Record<string, unknown>;
  depth: number;
  principal: unknown;
  dueAt: string;
  now: string;
}

export async function enqueueTriggeredRun(
  trx: Kysely<PlatformDB>,
  dialect: Dialect,
  run: TriggeredRun,
): Promise<string> {
  const id = newId();
  await trx
    .insertInto("outbox")
    .values({
      id,
      app_id: run.appId,
      source_kind: run.sourceKind,
      trigger_id: run.triggerId,
      script_id: run.scriptId,
      payload: dialect.json({ event: run.event }),
      due_at: run.dueAt,
      depth: run.depth,
      principal: run.principal === null || run.principal === undefined ? null : dialect.json(run.principal),
      reply_to: null,
      created_at: run.now,
    })
    .execute();
  await announceEnqueued(trx, dialect);
  return id;
}

/**
 * Tell dispatchers a row is waiting so it runs now rather than at their next poll. PostgreSQL:
 * NOTIFY inside the transaction reaches every instance at commit (repeats in one transaction
 * collapse into one). SQLite: wake this process's dispatcher; its claim transaction queues
 * behind the writer's, so it sees the row once committed.
 */
export async function announceEnqueued(trx: Kysely<PlatformDB>, dialect: Dialect): Promise<void> {
  if (dialect.backend === "postgres") await sql`SELECT pg_notify(${OUTBOX_CHANNEL}, '')`.execute(trx);
  else triggerRuntime().wakeDispatcher?.();
}
