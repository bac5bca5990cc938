import type { Database, Kysely } from "@app/kit/db";
import { newId } from "@app/kit/ids";
import type { GalleryDB } from "../db/schema.js";

/** The host audit table: every moderation action and event transition is recorded here. */
type Db = Kysely<GalleryDB>;

export type AuditAction =
  | "ban"
  | "unban"
  | "promote"
  | "demote"
  | "reset_pin"
  | "remove_upload"
  | "reject_upload"
  | "remove_comment"
  | "approve_upload"
  | "remove_guestbook_entry"
  | "approve_guestbook_entry"
  | "highlight_upload"
  | "unhighlight_upload"
  | `event.${"lock" | "unlock" | "release" | "reopen"}`;

export async function recordAudit(
  trx: Db,
  database: Database<GalleryDB>,
  entry: {
    actorId: string;
    action: AuditAction;
    targetType: "user" | "upload" | "comment" | "event" | "guestbook";
    targetId: string | null;
    at: string;
    details?: Record<string, unknown>;
  },
): Promise<void> {
  await trx
    .insertInto("host_audit")
    .values({
      id: newId(),
      actor_id: entry.actorId,
      action: entry.action,
      target_type: entry.targetType,
      target_id: entry.targetId,
      details: entry.details ? database.dialect.json(entry.details) : null,
      created_at: entry.at,
    })
    .execute();
}

/** Audit rows newest first, keyset-paginated on (created_at, id), strictly before `before`. */
export async function auditRows(db: Db, limit: number, before: [string, string] | null) {
  let q = db
    .selectFrom("host_audit")
    .leftJoin("users", "users.id", "host_audit.actor_id")
    .select([
      "host_audit.id",
      "host_audit.actor_id",
      "users.display_name as actor_name",
      "host_audit.action",
      "host_audit.target_type",
      "host_audit.target_id",
      "host_audit.created_at",
    ])
    .orderBy("host_audit.created_at", "desc")
    .orderBy("host_audit.id", "desc")
    .limit(limit);
  if (before) {
    const [at, id] = before;
    q = q.where((eb) =>
      eb.or([
        eb("host_audit.created_at", "<", at),
        eb.and([eb("host_audit.created_at", "=", at), eb("host_audit.id", "<", id)]),
      ]),
    );
  }
  return q.execute();
}
