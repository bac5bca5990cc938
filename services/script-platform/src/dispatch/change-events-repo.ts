import { type Kysely, sql } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";
import { REALTIME_CHANNEL } from "../realtime/hub.js";

/** SQL of the realtime log that publishDurable writes inside its transaction. */

/** Whether `topic` is a registered external topic of the app (only those reach subscribers). */
export async function isExternalTopic(
  trx: Kysely<PlatformDB>,
  appId: string,
  topic: string,
): Promise<boolean> {
  const row = await trx
    .selectFrom("topics")
    .select("external")
    .where("app_id", "=", appId)
    .where("name", "=", topic)
    .executeTakeFirst();
  return row !== undefined && Number(row.external) === 1;
}

/** Appends a message to the realtime log; returns its seq. */
export async function insertRealtimeMessage(
  trx: Kysely<PlatformDB>,
  m: { appId: string; topic: string; messageJson: string; now: string },
): Promise<number> {
  const row = await trx
    .insertInto("realtime_messages")
    .values({ app_id: m.appId, topic: m.topic, message: m.messageJson, created_at: m.now })
    .returning("seq")
    .executeTakeFirstOrThrow();
  return Number(row.seq);
}

/** PostgreSQL: delivered to every listening process at COMMIT, never on rollback. */
export async function notifyRealtime(trx: Kysely<PlatformDB>, note: string): Promise<void> {
  await sql`SELECT pg_notify(${REALTIME_CHANNEL}, ${note})`.execute(trx);
}
