import type { Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

/** SQL of the retention pass (dead letters: dead-letters-repository.ts). */

export async function deleteAbandonedBefore(trx: Kysely<PlatformDB>, before: string): Promise<number> {
  const res = await trx
    .deleteFrom("abandoned_executions")
    .where("created_at", "<", before)
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

export async function deleteRealtimeMessagesBefore(trx: Kysely<PlatformDB>, before: string): Promise<number> {
  const res = await trx.deleteFrom("realtime_messages").where("created_at", "<", before).executeTakeFirst();
  return Number(res.numDeletedRows);
}
