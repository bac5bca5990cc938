import { type Dialect, type Kysely, type SqlBool, sql } from "@app/kit/db";
import type { GalleryDB } from "../db/schema.js";
import { visibleUploader } from "../feed/visibility-repository.js";

/** Every SQL statement of the guestbook (issue 27). */
type Db = Kysely<GalleryDB>;

export interface EntryKey {
  created_at: string;
  id: string;
}

export interface EntryRow {
  id: string;
  user_id: string;
  display_name: string;
  text: string;
  voice_path: string | null;
  voice_mime: string | null;
  voice_duration_s: number | null;
  approval: "approved" | "pending";
  created_at: string;
}

const isoOf = (v: unknown) => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());

/** Who reads: hosts see pending entries of everyone, a guest only their own. */
export interface Reader {
  id: string;
  isHost: boolean;
}

/**
 * A live entry (not deleted) whose author is neither banned nor hidden, that `reader` may see:
 * approved, or pending and the reader's own or the reader a host.
 */
function visibleTo(reader: Reader | null) {
  const approved = sql<SqlBool>`g.approval = 'approved'`;
  if (!reader) return sql<SqlBool>`(g.deleted_at IS NULL AND ${approved} AND ${visibleUploader("us")})`;
  const pendingOk = reader.isHost ? sql<SqlBool>`1 = 1` : sql<SqlBool>`g.user_id = ${reader.id}`;
  return sql<SqlBool>`(g.deleted_at IS NULL AND (${approved} OR ${pendingOk}) AND ${visibleUploader("us")})`;
}

function entries(db: Db) {
  return db
    .selectFrom("guestbook_entries as g")
    .innerJoin("users as us", "us.id", "g.user_id")
    .select([
      "g.id",
      "g.user_id",
      "us.display_name",
      "g.text",
      "g.voice_path",
      "g.voice_mime",
      "g.voice_duration_s",
      "g.approval",
      "g.created_at",
    ]);
}

const toRow = (r: EntryRow): EntryRow => ({
  ...r,
  created_at: isoOf(r.created_at),
  voice_duration_s: r.voice_duration_s === null ? null : Number(r.voice_duration_s),
});

/** Newest first, strictly before `before`. */
export async function entriesPage(
  db: Db,
  reader: Reader,
  before: EntryKey | null,
  limit: number,
): Promise<EntryRow[]> {
  let q = entries(db).where(visibleTo(reader));
  if (before)
    q = q.where((eb) => eb(eb.refTuple("g.created_at", "g.id"), "<", eb.tuple(before.created_at, before.id)));
  const rows = await q.orderBy("g.created_at", "desc").orderBy("g.id", "desc").limit(limit).execute();
  return rows.map(toRow);
}

/** One entry as `reader` may see it (null reader: as anyone may), else undefined. */
export async function visibleEntry(db: Db, reader: Reader | null, id: string): Promise<EntryRow | undefined> {
  const row = await entries(db).where("g.id", "=", id).where(visibleTo(reader)).executeTakeFirst();
  return row ? toRow(row) : undefined;
}

/** What the keepsakes hold: approved live entries of visible authors, oldest first. */
export async function keepsakeEntries(db: Db): Promise<EntryRow[]> {
  const rows = await entries(db).where(visibleTo(null)).orderBy("g.created_at").orderBy("g.id").execute();
  return rows.map(toRow);
}

export async function insertEntry(
  db: Db,
  row: {
    id: string;
    user_id: string;
    text: string;
    voice_path: string | null;
    voice_mime: string | null;
    voice_size_bytes: number | null;
    voice_duration_s: number | null;
    approval: "approved" | "pending";
    created_at: string;
  },
): Promise<void> {
  await db
    .insertInto("guestbook_entries")
    .values({ ...row, deleted_at: null, deleted_by: null })
    .execute();
}

/** The live row, locked until the caller's transaction ends. */
export function lockLiveEntry(trx: Db, dialect: Dialect, id: string) {
  return dialect
    .forUpdate(
      trx
        .selectFrom("guestbook_entries")
        .select(["id", "user_id", "approval", "voice_path"])
        .where("id", "=", id)
        .where("deleted_at", "is", null),
    )
    .executeTakeFirst();
}

export async function markDeleted(trx: Db, id: string, by: "owner" | "host", now: string): Promise<void> {
  await trx
    .updateTable("guestbook_entries")
    .set({ deleted_at: now, deleted_by: by })
    .where("id", "=", id)
    .execute();
}

export async function markApproved(trx: Db, id: string): Promise<void> {
  await trx.updateTable("guestbook_entries").set({ approval: "approved" }).where("id", "=", id).execute();
}
