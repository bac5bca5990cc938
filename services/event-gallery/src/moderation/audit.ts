import type { Database, Kysely } from "@app/kit/db";
import { validationFailed } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { GalleryDB } from "../db/schema.js";

export type AuditAction =
  | "ban"
  | "unban"
  | "promote"
  | "demote"
  | "reset_pin"
  | "remove_upload"
  | "remove_comment"
  | "approve_upload";

export async function recordAudit(
  trx: Kysely<GalleryDB>,
  database: Database<GalleryDB>,
  entry: {
    actorId: string;
    action: AuditAction;
    targetType: "user" | "upload" | "comment";
    targetId: string;
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

export interface AuditEntry {
  id: string;
  actor: { id: string; display_name: string } | null;
  action: string;
  target: { type: string; id: string | null };
  created_at: string;
}

const encodeCursor = (createdAt: string, id: string) =>
  Buffer.from(JSON.stringify([createdAt, id])).toString("base64url");

function decodeCursor(cursor: string): [string, string] {
  try {
    const v = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown;
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === "string" && typeof v[1] === "string") {
      if (!Number.isNaN(Date.parse(v[0]))) return [v[0], v[1]];
    }
  } catch {
    // fall through
  }
  throw validationFailed("cursor", "The cursor is not valid.");
}

/** Newest first, keyset-paginated on (created_at, id). */
export async function listAudit(
  db: Kysely<GalleryDB>,
  opts: { limit: number; cursor?: string | undefined },
): Promise<{ entries: AuditEntry[]; next_cursor: string | null }> {
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
    .limit(opts.limit + 1);
  if (opts.cursor) {
    const [at, id] = decodeCursor(opts.cursor);
    q = q.where((eb) =>
      eb.or([
        eb("host_audit.created_at", "<", at),
        eb.and([eb("host_audit.created_at", "=", at), eb("host_audit.id", "<", id)]),
      ]),
    );
  }
  const rows = await q.execute();
  const page = rows.slice(0, opts.limit);
  const last = page.at(-1);
  return {
    entries: page.map((r) => ({
      id: r.id,
      actor: r.actor_id && r.actor_name ? { id: r.actor_id, display_name: r.actor_name } : null,
      action: r.action,
      target: { type: r.target_type, id: r.target_id },
      created_at: r.created_at,
    })),
    next_cursor: rows.length > opts.limit && last ? encodeCursor(last.created_at, last.id) : null,
  };
}
