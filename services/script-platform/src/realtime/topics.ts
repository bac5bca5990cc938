import type { Clock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { conflict, notFound } from "@app/kit/errors";
import { parseInput } from "@app/kit/validate";
import { z } from "zod";
import type { PlatformDB } from "../db/schema.js";
import { type TopicRow, topicsRepo } from "./topics-repository.js";

/**
 * Per-app registered topics (table `topics`, migration 0002): `external` topics are open to
 * realtime subscribers holding a subscriber token; internal ones are not subscribable.
 */
export const topicName = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\s*]+$/, "must not contain whitespace or `*`");

const createBody = z.strictObject({ name: topicName, external: z.boolean().default(false) });

export interface Topic {
  app_id: string;
  name: string;
  external: boolean;
  created_at: string;
}

type Deps = { database: Database<PlatformDB>; clock: Clock };

function toTopic(database: Database<PlatformDB>, r: TopicRow): Topic {
  return {
    app_id: r.app_id,
    name: r.name,
    external: Number(r.external) === 1,
    created_at: database.dialect.fromTimestamp(r.created_at),
  };
}

export async function createTopic(deps: Deps, appId: string, input: unknown): Promise<Topic> {
  const body = parseInput(createBody, input);
  const row = {
    app_id: appId,
    name: body.name,
    external: body.external ? 1 : 0,
    created_at: deps.clock.iso(),
  };
  try {
    await topicsRepo(deps.database).insert(row);
  } catch (err) {
    if (deps.database.dialect.isUniqueViolation(err))
      throw conflict("topic_exists", "A topic with this name already exists in the app.", { field: "name" });
    throw err;
  }
  return toTopic(deps.database, row);
}

export async function findTopic(
  deps: Pick<Deps, "database">,
  appId: string,
  name: string,
): Promise<Topic | null> {
  const r = await topicsRepo(deps.database).find(appId, name);
  return r ? toTopic(deps.database, r) : null;
}

export async function listTopics(
  deps: Pick<Deps, "database">,
  appId: string,
  opts: { cursor?: string | undefined; limit: number },
): Promise<{ items: Topic[]; next_cursor: string | null }> {
  const rows = await topicsRepo(deps.database).list(appId, { after: opts.cursor, limit: opts.limit + 1 });
  const items = rows.slice(0, opts.limit).map((r) => toTopic(deps.database, r));
  return { items, next_cursor: rows.length > opts.limit ? (items.at(-1)?.name ?? null) : null };
}

export async function deleteTopic(deps: Pick<Deps, "database">, appId: string, name: string): Promise<void> {
  if (!(await topicsRepo(deps.database).delete(appId, name)))
    throw notFound("Topic not found.", "topic_not_found");
}
