import { type Kysely, preparedQuery } from "@app/kit/db";
import type { GalleryDB, Role } from "../db/schema.js";
import { arrayParam, inArray } from "../feed/repository.js";

/** Every SQL statement of sessions. */
type Db = Kysely<GalleryDB>;

export interface SessionUserRow {
  session_id: string;
  token_hash: string;
  last_seen_at: string;
  id: string;
  display_name: string;
  role: Role;
  is_banned: number;
  /** The feed stamp (migration 010), read in the same statement: no extra round trip for /feed. */
  feed_stamp: number | string | null;
  /** The social stamp (migration 011: likes and comments), read in the same statement. */
  social_stamp: number | string | null;
  /** The user's viewer revision (migration 011: their likes). */
  viewer_rev: number | string;
  /** Whether the user has pending uploads of their own (0/1 on SQLite, a boolean on PostgreSQL). */
  has_pending: number | boolean;
}

export async function insertSession(
  db: Db,
  row: { id: string; user_id: string; token_hash: string; now: string; expires_at: string },
): Promise<void> {
  await db
    .insertInto("sessions")
    .values({
      id: row.id,
      user_id: row.user_id,
      token_hash: row.token_hash,
      created_at: row.now,
      last_seen_at: row.now,
      expires_at: row.expires_at,
      revoked_at: null,
    })
    .execute();
}

/**
 * The live session row joined with its user's live row (role and ban come from here, never from
 * a token), or undefined when unknown, revoked or idle-expired. One primary-key read.
 */
export async function liveSession(
  db: Db,
  sessionId: string,
  nowIso: string,
): Promise<SessionUserRow | undefined> {
  // Every authenticated request runs this: compiled once, a prepared statement on both backends.
  return (await liveSessionStatement(db, { sessionId, nowIso }))[0];
}

/**
 * `liveSession` for several sessions in one statement (auth's group read): the same rows, each
 * with the feed stamp read in that statement. Unknown, revoked and expired ids have no row.
 */
export async function liveSessions(
  db: Db,
  sessionIds: readonly string[],
  nowIso: string,
): Promise<SessionUserRow[]> {
  if (sessionIds.length === 0) return [];
  return liveSessionsStatement(db, { ids: arrayParam(db, sessionIds), nowIso });
}

const sessionUserQuery = (db: Db, nowIso: string) =>
  db
    .selectFrom("sessions")
    .innerJoin("users", "users.id", "sessions.user_id")
    .select([
      "sessions.id as session_id",
      "sessions.token_hash",
      "sessions.last_seen_at",
      "users.id",
      "users.display_name",
      "users.role",
      "users.is_banned",
      (eb) =>
        eb.selectFrom("feed_stamp").select("feed_stamp.n").where("feed_stamp.id", "=", 1).as("feed_stamp"),
      (eb) =>
        eb
          .selectFrom("social_stamp")
          .select("social_stamp.n")
          .where("social_stamp.id", "=", 1)
          .as("social_stamp"),
      "users.viewer_rev",
      (eb) =>
        eb
          .exists(
            eb
              .selectFrom("uploads as p")
              .select("p.id")
              .whereRef("p.user_id", "=", "users.id")
              .where("p.approval", "=", "pending")
              .where("p.deleted_at", "is", null),
          )
          .as("has_pending"),
    ])
    .where("sessions.revoked_at", "is", null)
    .where("sessions.expires_at", ">", nowIso);

const liveSessionStatement = preparedQuery((db: Db, p: { sessionId: string; nowIso: string }) =>
  sessionUserQuery(db, p.nowIso).where("sessions.id", "=", p.sessionId),
);

const liveSessionsStatement = preparedQuery((db: Db, p: { ids: unknown; nowIso: string }) =>
  sessionUserQuery(db, p.nowIso).where(inArray(db, "sessions.id", p.ids)),
);

export async function slideSession(db: Db, sessionId: string, nowIso: string, expiresIso: string) {
  await db
    .updateTable("sessions")
    .set({ last_seen_at: nowIso, expires_at: expiresIso })
    .where("id", "=", sessionId)
    .execute();
}

export async function revokeSession(db: Db, sessionId: string, nowIso: string) {
  await db
    .updateTable("sessions")
    .set({ revoked_at: nowIso })
    .where("id", "=", sessionId)
    .where("revoked_at", "is", null)
    .execute();
}
