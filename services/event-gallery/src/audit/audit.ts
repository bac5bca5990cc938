import type { Kysely } from "@app/kit/db";
import { validationFailed } from "@app/kit/errors";
import type { GalleryDB } from "../db/schema.js";
import { auditRows } from "./repository.js";

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
  const rows = await auditRows(db, opts.limit + 1, opts.cursor ? decodeCursor(opts.cursor) : null);
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
