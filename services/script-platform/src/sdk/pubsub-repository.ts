import type { Database } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

/** SQL of the apps' subscriber-token signing keys (stored sealed; pubsub.ts seals and opens). */

export async function signingKeyOf(database: Database<PlatformDB>, appId: string): Promise<string | null> {
  const row = await database.db
    .selectFrom("app_signing_keys")
    .select("key_enc")
    .where("app_id", "=", appId)
    .executeTakeFirst();
  return row?.key_enc ?? null;
}

/** Stores the first key of an app; a key another process stored first wins (the insert is a no-op). */
export async function insertSigningKeyIfAbsent(
  database: Database<PlatformDB>,
  k: { appId: string; keyEnc: string; now: string },
): Promise<void> {
  await database.db
    .insertInto("app_signing_keys")
    .values({ app_id: k.appId, key_enc: k.keyEnc, created_at: k.now })
    .onConflict((oc) => oc.column("app_id").doNothing())
    .execute();
}
