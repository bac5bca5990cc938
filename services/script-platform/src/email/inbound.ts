import { createHmac } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { AppError, badRequest, notFound, unauthorized } from "@app/kit/errors";
import { safeEqual } from "@app/kit/http";
import { parseInput } from "@app/kit/validate";
import { z } from "zod";
import type { PlatformDB } from "../db/schema.js";
import type { OutboxWriter } from "../dispatch/enqueue.js";
import { findTrigger } from "../triggers/repository.js";
import { inboundSecretAad } from "../triggers/service.js";

/**
 * Inbound email webhook (POST /api/v1/email-inbound/{app_id}/{trigger_id}): an accepted message
 * becomes one outbox row for the email trigger; the script sees it as ctx.event.email.
 * Order of checks: unknown app/trigger 404, bad signature 401, invalid JSON 400, wrong shape 422.
 */
export const emailMessage = z.strictObject({
  from: z.string().min(1).max(1000),
  to: z.array(z.string().min(1).max(1000)).max(1000),
  cc: z.array(z.string().min(1).max(1000)).max(1000).default([]),
  subject: z.string().default(""),
  text: z.string().default(""),
  html: z.string().default(""),
  received_at: z.iso.datetime({ offset: true }).optional(),
  message_id: z.string().max(1000).optional(),
});

export type EmailMessage = z.output<typeof emailMessage>;

export interface InboundDeps {
  database: Database<PlatformDB>;
  clock: Clock;
  secretBox: { openString(sealed: string, aad?: string): string };
  outbox: OutboxWriter;
}

const SIGNATURE_RE = /^sha256=([0-9a-fA-F]{64})$/;

export async function acceptInboundEmail(
  deps: InboundDeps,
  appId: string,
  triggerId: string,
  raw: Buffer,
  signature: string | undefined,
): Promise<{ outbox_id: string }> {
  const { database, clock } = deps;
  const trigger = await findTrigger(database.db, database.dialect, appId, triggerId);
  if (trigger?.kind !== "email" || !trigger.enabled)
    throw notFound("No email trigger here.", "trigger_not_found");

  const sealed = trigger.detail.email_inbound_secret_enc;
  if (sealed !== null) {
    const secret = deps.secretBox.openString(sealed, inboundSecretAad(trigger.id));
    const expected = createHmac("sha256", secret).update(raw).digest("hex");
    const presented = SIGNATURE_RE.exec(signature?.trim() ?? "")?.[1]?.toLowerCase() ?? "";
    if (!safeEqual(presented, expected))
      throw unauthorized("The signature does not match.", "invalid_signature");
  }

  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString("utf8"));
  } catch {
    throw badRequest("invalid_json", "The body is not valid JSON.");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    throw new AppError(422, "validation_failed", "The body must be a JSON object.", { field: null });
  const msg = parseInput(emailMessage, parsed);
  const now = clock.iso();
  const email = {
    from: msg.from,
    to: msg.to,
    cc: msg.cc,
    subject: msg.subject,
    text: msg.text,
    html: msg.html,
    received_at: msg.received_at ?? now,
    message_id: msg.message_id ?? null,
  };
  const outboxId = await database.writeTx((trx) =>
    deps.outbox.enqueue(trx, {
      appId,
      sourceKind: "email",
      triggerId: trigger.id,
      scriptId: trigger.script_id,
      event: { email },
      depth: 0,
      principal: trigger.registered_by_principal,
      dueAt: now,
      now,
    }),
  );
  return { outbox_id: outboxId };
}
