import { type Dialect, type Kysely, preparedQuery, type Selectable, sql } from "@app/kit/db";
import { type ScriptRecord, scriptRecordOf } from "../control/scripts-repo.js";
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

/** The scripts columns, read with an `s_` prefix next to another table's (scriptSelect, scriptOf). */
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
export const scriptSelect = sql.raw(SCRIPT_COLUMNS.map((c) => `s.${c} AS s_${c}`).join(", "));
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
        script: scriptOf(dialect, r),
      });
  return out;
}

/** A publish batch's messages as the one-statement write binds them (one array entry per message). */
export type PubsubRunsInput = {
  apps: string[];
  topics: string[];
  /** The outbox payload of each message's runs (JSON text). */
  payloads: string[];
  /** The depth of each message's runs. */
  depths: number[];
  /** Row ids: the statement writes nothing unless every matched run gets one. */
  ids: string[];
  now: string;
  /** The first `own` runs are written claimed by `instance` until `leaseUntil`. */
  own: number;
  instance: string | null;
  leaseUntil: string | null;
  /** Announces the rows not written claimed (NOTIFY at commit); only sent when there are any. */
  channel: string;
};

/** One run the statement wrote: `n` is its 1-based position (id `ids[n - 1]`), `ord` its message's. */
export interface PubsubRunRow {
  n: number;
  ord: number;
  trigger_id: string;
  script_id: string;
  principal_json: string;
  /** Its script, read once per script among the runs written claimed. */
  script: ScriptRecord | null;
}

export type PubsubRunsResult =
  | { written: true; runs: PubsubRunRow[] }
  /** Nothing written: a message's topic is a registered external topic, or `ids` were too few. */
  | { written: false; matched: number };

type RunsRow = {
  k: "g" | "r" | "s";
  written: boolean | null;
  n: string | number | null;
  ord: string | number | null;
  trigger_id: string | null;
  script_id: string | null;
  principal_json: string | null;
} & ScriptColumns;

// A publish batch in one statement (PostgreSQL): the apps' enabled pubsub triggers matched
// against each message's topic (patterns.ts matchTopic, as in the lookup above), in message then
// trigger id order; the outbox rows of all matches written with the bound ids, the first `own`
// claimed by this process; a NOTIFY only when some row is not claimed; the scripts of the claimed
// runs. It writes nothing when a message goes to the realtime log (an external topic needs a
// transaction) or when the ids are too few: the caller then takes the general path.
const publishRunsStatement = preparedQuery(
  (_db: Kysely<PlatformDB>, p: PubsubRunsInput) => sql<RunsRow>`
WITH m AS (
  SELECT * FROM unnest(${p.apps}::text[], ${p.topics}::text[], ${p.payloads}::text[], ${p.depths}::int[])
    WITH ORDINALITY AS m(app_id, topic, payload, depth, ord)
), r AS (
  SELECT m.ord, t.id AS trigger_id, t.app_id, t.script_id, t.registered_by_principal::text AS principal_json,
         m.payload, m.depth, row_number() OVER (ORDER BY m.ord, t.id) AS n
    FROM m
    JOIN triggers t ON t.app_id = m.app_id AND t.kind = 'pubsub' AND t.enabled = 1
    JOIN trigger_details d ON d.trigger_id = t.id
   WHERE d.topic_pattern = '*' OR d.topic_pattern = m.topic
      OR (right(d.topic_pattern, 2) = '.*' AND starts_with(m.topic, left(d.topic_pattern, -1))
          AND length(m.topic) > length(d.topic_pattern) - 1)
), go AS (
  SELECT NOT EXISTS (SELECT 1 FROM topics x JOIN m ON x.app_id = m.app_id AND x.name = m.topic
                      WHERE x.external = 1)
         AND (SELECT count(*) FROM r) <= cardinality(${p.ids}::text[]) AS ok
), ins AS (
  INSERT INTO outbox (id, app_id, source_kind, trigger_id, script_id, payload, due_at, depth, principal,
                      created_at, claimed_by, lease_until, reply_to)
  SELECT (${p.ids}::text[])[r.n], r.app_id, 'pubsub', r.trigger_id, r.script_id, r.payload,
         ${p.now}::timestamptz, r.depth, r.principal_json, ${p.now}::timestamptz,
         CASE WHEN r.n <= ${p.own}::int THEN ${p.instance}::text END,
         CASE WHEN r.n <= ${p.own}::int THEN ${p.leaseUntil}::timestamptz END, NULL
    FROM r WHERE (SELECT ok FROM go)
  RETURNING claimed_by
)
SELECT 's' AS k, NULL::boolean AS written, NULL::bigint AS notified, NULL::bigint AS n, NULL::bigint AS ord,
       NULL::text AS trigger_id, s.id AS script_id, NULL::text AS principal_json, ${scriptSelect}
  FROM scripts s WHERE s.id IN (SELECT script_id FROM r WHERE n <= ${p.own}::int)
UNION ALL
SELECT 'g', go.ok,
       (SELECT count(pg_notify(${p.channel}::text, ''))
          FROM (SELECT 1 FROM ins WHERE claimed_by IS NULL LIMIT 1) z),
       NULL, NULL, NULL, NULL, NULL, ${noScript}
  FROM go
UNION ALL
SELECT 'r', NULL, NULL, r.n, r.ord, r.trigger_id, r.script_id, r.principal_json, ${noScript} FROM r`,
);

/**
 * PostgreSQL: a publish batch's trigger lookup, outbox rows and NOTIFY as one statement (one
 * round trip, atomic by itself). See publishRunsStatement for when it writes nothing.
 */
export async function insertPubsubRuns(
  db: Kysely<PlatformDB>,
  dialect: Dialect,
  input: PubsubRunsInput,
): Promise<PubsubRunsResult> {
  const rows = await publishRunsStatement(db, input);
  const runs: PubsubRunRow[] = [];
  const scripts = new Map<string, ScriptRecord>();
  let written = false;
  for (const r of rows)
    if (r.k === "g") written = r.written === true;
    else if (r.k === "r")
      runs.push({
        n: Number(r.n),
        ord: Number(r.ord),
        trigger_id: r.trigger_id ?? "",
        script_id: r.script_id ?? "",
        principal_json: r.principal_json ?? "null",
        script: null,
      });
    else {
      const script = scriptOf(dialect, r);
      if (script) scripts.set(script.id, script);
    }
  if (!written) return { written: false, matched: runs.length };
  for (const run of runs) if (run.n <= input.own) run.script = scripts.get(run.script_id) ?? null;
  return { written: true, runs };
}

export type ScriptColumns = { [K in (typeof SCRIPT_COLUMNS)[number] as `s_${K}`]: unknown };

/** The `s_` columns of a row as a script record; null when the row carries none. */
export function scriptOf(dialect: Dialect, r: ScriptColumns) {
  return r.s_id === null
    ? null
    : scriptRecordOf(
        dialect,
        Object.fromEntries(SCRIPT_COLUMNS.map((c) => [c, r[`s_${c}`]])) as Selectable<PlatformDB["scripts"]>,
      );
}

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
