import { type Kysely, preparedQuery, sql } from "@app/kit/db";
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

/** An enabled pubsub trigger as a publish needs it; the principal as the JSON text it is stored as. */
export interface PubsubTriggerRow {
  id: string;
  app_id: string;
  script_id: string;
  principal_json: string;
  topic_pattern: string;
}

/** A publish batch's lookups: its apps' enabled pubsub triggers (id order), its external topics. */
export interface PubsubLookup {
  triggers: PubsubTriggerRow[];
  /** `${app_id}\0${topic}` of every registered external topic among the batch's messages. */
  external: Set<string>;
}

type LookupRow = {
  src: "t" | "x";
  app_id: string;
  id: string | null;
  script_id: string | null;
  principal_json: string | null;
  topic: string | null;
};

// One statement for both lookups (a UNION ALL, told apart by src), prepared once per connection:
// the trigger rows come with only the columns a publish uses, the principal as its JSON text.
const lookupStatement = preparedQuery(
  (_db: Kysely<PlatformDB>, p: { apps: string[]; topics: string[] }) => sql<LookupRow>`
SELECT 't' AS src, t.app_id, t.id, t.script_id, t.registered_by_principal::text AS principal_json,
       d.topic_pattern AS topic
  FROM triggers t JOIN trigger_details d ON d.trigger_id = t.id
 WHERE t.app_id = ANY(${p.apps}::text[]) AND t.kind = 'pubsub' AND t.enabled = 1
UNION ALL
SELECT 'x', app_id, NULL, NULL, NULL, name
  FROM topics
 WHERE app_id = ANY(${p.apps}::text[]) AND name = ANY(${p.topics}::text[]) AND external = 1
 ORDER BY src, id`,
);

/**
 * PostgreSQL: the enabled pubsub triggers of `appIds` and which of `topics` are registered
 * external topics of those apps, in one round trip.
 */
export async function pubsubLookup(
  db: Kysely<PlatformDB>,
  appIds: readonly string[],
  topics: readonly string[],
): Promise<PubsubLookup> {
  const rows = await lookupStatement(db, { apps: [...appIds], topics: [...topics] });
  const out: PubsubLookup = { triggers: [], external: new Set() };
  for (const r of rows)
    if (r.src === "x") out.external.add(`${r.app_id}\0${r.topic}`);
    else
      out.triggers.push({
        id: r.id ?? "",
        app_id: r.app_id,
        script_id: r.script_id ?? "",
        principal_json: r.principal_json ?? "null",
        topic_pattern: r.topic ?? "",
      });
  return out;
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
