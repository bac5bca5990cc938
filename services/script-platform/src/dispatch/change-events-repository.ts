import { type Dialect, type Kysely, preparedQuery, type Selectable, sql } from "@app/kit/db";
import { type ScriptRecord, scriptRecordOf } from "../control/scripts-repository.js";
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
  /** Its script, when the lookup read it (its pattern matches a topic of the batch). */
  script?: ScriptRecord | null;
}

/** A publish batch's lookups: its apps' enabled pubsub triggers (id order), its external topics. */
export interface PubsubLookup {
  triggers: PubsubTriggerRow[];
  /** `${app_id}\0${topic}` of every registered external topic among the batch's messages. */
  external: Set<string>;
}

/** The scripts columns, read with an `s_` prefix next to the trigger's. */
const SCRIPT_COLUMNS = [
  "id",
  "app_id",
  "name",
  "kind",
  "source",
  "description",
  "timeout_seconds",
  "sandbox",
  "memory_limit_mb",
  "created_at",
  "updated_at",
  "language",
  "authored_source",
  "version",
] as const satisfies readonly (keyof PlatformDB["scripts"])[];
const scriptSelect = sql.raw(SCRIPT_COLUMNS.map((c) => `s.${c} AS s_${c}`).join(", "));
const noScript = sql.raw(SCRIPT_COLUMNS.map(() => "NULL").join(", "));

type LookupRow = {
  src: "t" | "x";
  app_id: string;
  id: string | null;
  script_id: string | null;
  principal_json: string | null;
  topic: string | null;
} & { [K in (typeof SCRIPT_COLUMNS)[number] as `s_${K}`]: unknown };

// One statement for both lookups (a UNION ALL, told apart by src), prepared once per connection:
// the trigger rows come with only the columns a publish uses, the principal as its JSON text,
// and the script of each trigger whose pattern matches a topic of the batch (patterns.ts
// matchTopic in SQL: `*`, exact, or `<prefix>.*` with something after the prefix) so that
// runs this process starts at once need no script read.
const lookupStatement = preparedQuery(
  (_db: Kysely<PlatformDB>, p: { apps: string[]; topics: string[] }) => sql<LookupRow>`
SELECT 't' AS src, t.app_id, t.id, t.script_id, t.registered_by_principal::text AS principal_json,
       d.topic_pattern AS topic, ${scriptSelect}
  FROM triggers t JOIN trigger_details d ON d.trigger_id = t.id
  LEFT JOIN scripts s ON s.id = t.script_id AND EXISTS (
    SELECT 1 FROM unnest(${p.topics}::text[]) AS m(topic)
     WHERE d.topic_pattern = '*' OR d.topic_pattern = m.topic
        OR (right(d.topic_pattern, 2) = '.*' AND starts_with(m.topic, left(d.topic_pattern, -1))
            AND length(m.topic) > length(d.topic_pattern) - 1))
 WHERE t.app_id = ANY(${p.apps}::text[]) AND t.kind = 'pubsub' AND t.enabled = 1
UNION ALL
SELECT 'x', app_id, NULL, NULL, NULL, name, ${noScript}
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
  dialect: Dialect,
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
        script:
          r.s_id === null
            ? null
            : scriptRecordOf(
                dialect,
                Object.fromEntries(SCRIPT_COLUMNS.map((c) => [c, r[`s_${c}`]])) as Selectable<
                  PlatformDB["scripts"]
                >,
              ),
      });
  return out;
}

/** Appends a message to the realtime log; returns its seq. */
/** Scripts by id as `trx` reads them (a publish batch's runs this process starts itself). */
export async function scriptsByIds(
  trx: Kysely<PlatformDB>,
  dialect: Dialect,
  ids: readonly string[],
): Promise<Map<string, ScriptRecord>> {
  if (ids.length === 0) return new Map();
  const rows = await trx
    .selectFrom("scripts")
    .selectAll()
    .where("id", "in", [...ids])
    .execute();
  return new Map(rows.map((r) => [r.id, scriptRecordOf(dialect, r)]));
}

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
