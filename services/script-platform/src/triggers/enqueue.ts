import type { Dialect, Kysely } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { PlatformDB } from "../db/schema.js";

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
  return id;
}
