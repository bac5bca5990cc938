import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { AppError, notFound, validationFailed } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import { parseInput } from "@app/kit/validate";
import type { PlatformDB } from "../db/schema.js";
import type { TriggerKind } from "../db/schema-triggers.js";
import { checkCronSchedule, nextFireMs } from "./cron-schedule.js";
import { createBodies, patchBody, TRIGGER_KINDS, type Trigger, type TriggerDetail } from "./model.js";
import { checkCollectionPattern, checkTopicPattern } from "./patterns.js";
import * as repo from "./repository.js";

/** What trigger management needs from the rest of the platform. */
export interface TriggerDeps {
  database: Database<PlatformDB>;
  clock: Clock;
  secretBox: {
    seal(plaintext: string, aad?: string): string;
    openString(sealed: string, aad?: string): string;
  };
  scripts: { byId(id: string): Promise<{ id: string; app_id: string; kind: string } | null> };
}

export function isTriggerKind(s: string): s is TriggerKind {
  return (TRIGGER_KINDS as readonly string[]).includes(s);
}

/** AAD binding a sealed inbound secret to its trigger (a copied value fails to open). */
export const inboundSecretAad = (triggerId: string) => `email-inbound:${triggerId}`;

const EMPTY_DETAIL: TriggerDetail = {
  collection_pattern: null,
  operations: null,
  topic_pattern: null,
  cron_schedule: null,
  cron_timezone: null,
  cron_next_due_at: null,
  cron_last_fired_at: null,
  email_inbound_secret_enc: null,
};

/**
 * Create a trigger of `kind` in `appId`. The target must be an endpoint script of the same app
 * (422 `invalid_trigger_target`); `principal` is the registering admin, stored so that the
 * dispatcher runs the script as them.
 */
export async function createTrigger(
  deps: TriggerDeps,
  appId: string,
  kindParam: string,
  input: unknown,
  principal: unknown,
): Promise<Trigger> {
  if (!isTriggerKind(kindParam)) throw notFound("Unknown trigger kind.", "unknown_trigger_kind");
  const kind = kindParam;
  const body = parseInput(createBodies[kind], input) as Record<string, unknown> & {
    script_id: string;
    enabled?: boolean;
    retry?: Trigger["retry"];
  };
  const script = await deps.scripts.byId(body.script_id);
  if (!script || script.app_id !== appId)
    throw new AppError(422, "invalid_trigger_target", "The target script is not a script of this app.", {
      field: "script_id",
    });
  if (script.kind !== "endpoint")
    throw new AppError(
      422,
      "invalid_trigger_target",
      "A trigger target must be an endpoint script, not a module.",
      {
        field: "script_id",
      },
    );

  const id = newId();
  const now = deps.clock.now();
  const detail: TriggerDetail = { ...EMPTY_DETAIL };
  switch (kind) {
    case "kv":
    case "docs":
    case "files": {
      const collection = String(body.collection);
      const err = checkCollectionPattern(collection);
      if (err) throw validationFailed("collection", `collection: ${err}.`);
      detail.collection_pattern = collection;
      detail.operations = [...new Set((body.operations as string[] | undefined) ?? [])];
      break;
    }
    case "pubsub": {
      const topic = String(body.topic);
      const err = checkTopicPattern(topic);
      if (err) throw validationFailed("topic", `topic: ${err}.`);
      detail.topic_pattern = topic;
      break;
    }
    case "cron": {
      const schedule = String(body.schedule).trim();
      const timezone = String(body.timezone);
      const err = checkCronSchedule(schedule, timezone);
      if (err) throw validationFailed(err.field, err.message);
      detail.cron_schedule = schedule;
      detail.cron_timezone = timezone;
      const next = nextFireMs(schedule, timezone, now);
      detail.cron_next_due_at = next === null ? null : toIso(next);
      break;
    }
    case "email":
      if (typeof body.inbound_secret === "string")
        detail.email_inbound_secret_enc = deps.secretBox.seal(body.inbound_secret, inboundSecretAad(id));
      break;
    case "dead_letter":
      break;
  }
  const trigger: Trigger = {
    id,
    app_id: appId,
    kind,
    script_id: script.id,
    enabled: body.enabled ?? true,
    registered_by_principal: principal,
    retry: body.retry && Object.keys(body.retry).length > 0 ? body.retry : null,
    created_at: toIso(now),
    detail,
  };
  await deps.database.writeTx((trx) => repo.insertTrigger(trx, deps.database.dialect, trigger));
  return trigger;
}

export async function getTrigger(deps: TriggerDeps, appId: string, id: string): Promise<Trigger> {
  const t = await repo.findTrigger(deps.database.db, deps.database.dialect, appId, id);
  if (!t) throw notFound("Trigger not found.", "trigger_not_found");
  return t;
}

export async function listTriggers(
  deps: TriggerDeps,
  appId: string,
  opts: { cursor?: string | undefined; limit: number },
): Promise<{ items: Trigger[]; next_cursor: string | null }> {
  const rows = await repo.listTriggers(deps.database.db, deps.database.dialect, appId, {
    after: opts.cursor,
    limit: opts.limit + 1,
  });
  const items = rows.slice(0, opts.limit);
  return { items, next_cursor: rows.length > opts.limit ? (items.at(-1)?.id ?? null) : null };
}

/** PATCH `{enabled}`. Re-enabling a cron trigger schedules its next fire from now. */
export async function patchTrigger(
  deps: TriggerDeps,
  appId: string,
  id: string,
  input: unknown,
): Promise<Trigger> {
  const { enabled } = parseInput(patchBody, input);
  await deps.database.writeTx(async (trx) => {
    const t = await repo.findTrigger(trx, deps.database.dialect, appId, id);
    if (!t) throw notFound("Trigger not found.", "trigger_not_found");
    await repo.setTriggerEnabled(trx, appId, id, enabled);
    if (t.kind === "cron" && enabled && !t.enabled && t.detail.cron_schedule && t.detail.cron_timezone) {
      const next = nextFireMs(t.detail.cron_schedule, t.detail.cron_timezone, deps.clock.now());
      await repo.setCronNextDue(trx, id, next === null ? null : toIso(next));
    }
  });
  return getTrigger(deps, appId, id);
}

export async function deleteTrigger(deps: TriggerDeps, appId: string, id: string): Promise<void> {
  const deleted = await deps.database.writeTx((trx) => repo.deleteTrigger(trx, appId, id));
  if (!deleted) throw notFound("Trigger not found.", "trigger_not_found");
}
