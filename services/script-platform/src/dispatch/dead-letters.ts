import type { Clock, TimerHandle } from "@app/kit/clock";
import type { Database, Dialect, Kysely } from "@app/kit/db";
import { conflict, notFound } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { Logger } from "@app/kit/logger";
import type { PlatformDB } from "../db/schema.js";
import { enabledTriggersOfKind } from "../triggers/repository.js";
import {
  anyPendingHandler,
  type DeadLetter,
  findDeadLetter,
  findHandler,
  insertDeadLetter,
  insertHandler,
  listDeadLetters,
  lockDeadLetter,
  markVanishedHandlersSucceeded,
  resolutionOf,
  resolveDeadLetter,
  setHandlerStatus,
  settledHandlerOutcomes,
} from "./dead-letters-repository.js";
import type { OutboxWriter } from "./enqueue.js";

/**
 * Dead letters: written when a run exhausts its retries; each one fires the app's enabled
 * dead_letter triggers. Resolution: `replayed` / `ignored` by an admin; `handled_by_script`
 * when every dead_letter handler run succeeded, `handler_failed` when one exhausted its retries.
 * A failing handler run never produces another dead letter (no dead_letter → dead_letter loop).
 */

export interface FailedRow {
  outboxId: string;
  appId: string;
  triggerId: string | null;
  scriptId: string;
  sourceKind: string;
  payload: string;
  principal: string | null;
  depth: number;
  attempts: number;
  error: { kind: string; message: string };
  executionId: string | null;
}

/** Writes the dead letter and enqueues the dead_letter triggers, inside the settling transaction. */
export async function deadLetter(
  trx: Kysely<PlatformDB>,
  dialect: Dialect,
  outbox: OutboxWriter,
  row: FailedRow,
  now: string,
): Promise<DeadLetter> {
  const dl: DeadLetter = {
    id: newId(),
    app_id: row.appId,
    trigger_id: row.triggerId,
    script_id: row.scriptId,
    source_kind: row.sourceKind,
    payload: row.payload,
    principal: row.principal,
    depth: row.depth,
    error: row.error,
    attempts: row.attempts,
    execution_id: row.executionId,
    created_at: now,
    resolved_at: null,
    resolution: null,
  };
  await insertDeadLetter(trx, dialect, dl);
  const handlers = await enabledTriggersOfKind(trx, dialect, row.appId, "dead_letter");
  for (const t of handlers) {
    const outboxId = await outbox.enqueue(trx, {
      appId: row.appId,
      sourceKind: "dead_letter",
      triggerId: t.id,
      scriptId: t.script_id,
      event: { dead_letter: deadLetterEvent(dl) },
      depth: row.depth + 1,
      principal: t.registered_by_principal,
      dueAt: now,
      now,
    });
    await insertHandler(trx, outboxId, dl.id);
  }
  return dl;
}

/** ctx.event.dead_letter as a handler script sees it. The payload is JSON text (as in the outbox). */
export function deadLetterEvent(dl: DeadLetter): Record<string, unknown> {
  const payload = JSON.parse(dl.payload) as { event?: unknown } | null;
  return {
    id: dl.id,
    trigger_id: dl.trigger_id,
    script_id: dl.script_id,
    source_kind: dl.source_kind,
    event: payload?.event ?? null,
    error: dl.error,
    attempts: dl.attempts,
    execution_id: dl.execution_id,
    created_at: dl.created_at,
  };
}

/** A dead_letter handler run exhausted its retries: resolve its dead letter as handler_failed. */
export async function handlerRunFailed(
  trx: Kysely<PlatformDB>,
  outboxId: string,
  now: string,
): Promise<void> {
  const h = await findHandler(trx, outboxId);
  if (!h) return;
  await setHandlerStatus(trx, outboxId, "failed");
  if ((await resolutionOf(trx, h.dead_letter_id)) === null)
    await resolveDeadLetter(trx, h.dead_letter_id, "handler_failed", now);
}

/**
 * Settle dead letters whose handler runs have all finished. A handler's outbox row disappears
 * when it succeeds (the dispatcher deletes it); a failure is recorded before its row goes.
 */
export async function settleHandledDeadLetters(database: Database<PlatformDB>, now: string): Promise<number> {
  // A read first: with no handler pending (the common case) no write lock is taken.
  if (!(await anyPendingHandler(database.db))) return 0;
  return database.writeTx(async (trx) => {
    await markVanishedHandlersSucceeded(trx);
    const outcomes = await settledHandlerOutcomes(trx);
    for (const o of outcomes)
      await resolveDeadLetter(
        trx,
        o.dead_letter_id,
        o.failed > 0 ? "handler_failed" : "handled_by_script",
        now,
      );
    return outcomes.length;
  });
}

const REOPENABLE = new Set<DeadLetter["resolution"]>([null, "handler_failed"]);

/** Re-enqueue the original run (fresh attempts) and resolve the dead letter as `replayed`. */
export async function replayDeadLetter(
  database: Database<PlatformDB>,
  outbox: OutboxWriter,
  appId: string,
  id: string,
  now: string,
): Promise<DeadLetter> {
  return database.writeTx(async (trx) => {
    const dl = await lockedDeadLetter(trx, database.dialect, appId, id);
    await outbox.insert(trx, {
      id: newId(),
      app_id: dl.app_id,
      source_kind: dl.source_kind,
      trigger_id: dl.trigger_id,
      script_id: dl.script_id,
      payload: dl.payload,
      due_at: now,
      depth: dl.depth,
      principal: dl.principal,
      created_at: now,
    });
    await resolveDeadLetter(trx, id, "replayed", now);
    return { ...dl, resolution: "replayed", resolved_at: now };
  });
}

export async function ignoreDeadLetter(
  database: Database<PlatformDB>,
  appId: string,
  id: string,
  now: string,
): Promise<DeadLetter> {
  return database.writeTx(async (trx) => {
    const dl = await lockedDeadLetter(trx, database.dialect, appId, id);
    await resolveDeadLetter(trx, id, "ignored", now);
    return { ...dl, resolution: "ignored", resolved_at: now };
  });
}

async function lockedDeadLetter(trx: Kysely<PlatformDB>, dialect: Dialect, appId: string, id: string) {
  const dl = (await lockDeadLetter(trx, dialect, appId, id))
    ? await findDeadLetter(trx, dialect, appId, id)
    : null;
  if (!dl) throw notFound("Dead letter not found.", "dead_letter_not_found");
  if (!REOPENABLE.has(dl.resolution))
    throw conflict("dead_letter_resolved", `The dead letter is already resolved (${dl.resolution}).`, {
      resolution: dl.resolution,
    });
  return dl;
}

export { findDeadLetter, listDeadLetters };

/** The API shape of a dead letter: what a handler sees, plus its app and resolution. */
export function presentDeadLetter(dl: DeadLetter): Record<string, unknown> {
  return {
    ...deadLetterEvent(dl),
    app_id: dl.app_id,
    status: dl.resolution === null ? "unresolved" : "resolved",
    resolution: dl.resolution,
    resolved_at: dl.resolved_at,
  };
}

/** Resolves dead letters whose dead_letter handler runs have all finished (every second). */
export function createDeadLetterSettler(deps: {
  database: Database<PlatformDB>;
  clock: Clock;
  logger: Logger;
  everyMs?: number;
}) {
  const { database, clock, logger } = deps;
  let timer: TimerHandle | null = null;
  let busy = false;
  const run = async () => {
    if (busy) return;
    busy = true;
    try {
      await settleHandledDeadLetters(database, clock.iso());
    } catch (err) {
      logger.error({ err }, "dead-letter settle failed");
    } finally {
      busy = false;
    }
  };
  return {
    start() {
      timer ??= clock.setInterval(() => void run(), deps.everyMs ?? 1000);
    },
    stop() {
      timer?.cancel();
      timer = null;
    },
  };
}
