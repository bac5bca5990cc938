import { AppError, forbidden, notFound, validationFailed } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import { recordAudit } from "../audit/repository.js";
import type { AuthedUser, GalleryContext } from "../context.js";
import { bumpEpochIfReleased } from "../event/state.js";
import { clampLimit } from "../feed/feed.js";
import { decodePageKey, encodePageKey } from "../feed/page-key.js";
import { pendingApprovalFor } from "../premoderation/rules.js";
import { SOCIAL_WRITES_PER_MIN } from "../social/service.js";
import type { FormPart } from "../uploads/ingest.js";
import { isUploadsLocked, isUploadsLockedForShare } from "../uploads/repository.js";
import { removeQuietly, resolveMediaPath } from "../uploads/storage.js";
import * as repo from "./repository.js";
import { type StoredVoice, storeVoice, VOICE_MAX_BYTES, type VoiceTools, voiceTools } from "./voice.js";

/**
 * The guestbook (issue 27, contract "Live event"): guests leave a text message and, when the event
 * allows it, a voice message. Moderated like uploads: the author deletes their own, hosts take any
 * down, a ban hides the author's entries, pre-moderation holds guests' entries for a host.
 */

export const GUESTBOOK_TEXT_MAX = 2000;
const PAGE_DEFAULT = 30;

export interface GuestbookEntry {
  id: string;
  author: { id: string; display_name: string };
  text: string;
  voice_url: string | null;
  voice_duration_s: number | null;
  created_at: string;
  approval: "approved" | "pending";
}

const entryNotFound = () => notFound("No such guestbook entry.");
const closed = () =>
  forbidden("The event is closed: the guestbook takes no new entries until it reopens.", "uploads_locked");
const invalidMultipart = (status: 400 | 422, message: string) =>
  new AppError(status, "invalid_multipart", message);

/** Text of an entry: trimmed; 1..2000 characters, or 0..2000 beside a voice message. */
export function validateEntryText(raw: unknown, withVoice: boolean): string {
  if (typeof raw !== "string") {
    if (raw === undefined && withVoice) return "";
    throw validationFailed("text", "text must be a string.");
  }
  const text = raw.trim();
  const n = [...text].length;
  if (n > GUESTBOOK_TEXT_MAX || (n < 1 && !withVoice))
    throw validationFailed("text", `A guestbook message must be 1 to ${GUESTBOOK_TEXT_MAX} characters.`);
  return text;
}

/** What POST /guestbook carries: a JSON body, or a multipart form (`text?`, then `file`). */
export type EntryInput =
  | { kind: "json"; body: unknown }
  | {
      kind: "multipart";
      parts: (limits: {
        fileSize: number;
        fieldSize: number;
        fields: number;
        files: number;
      }) => AsyncIterable<FormPart>;
    };

/** What the guestbook needs of the gallery context; `tools` replaces ffmpeg in tests. */
export type GuestbookDeps = Pick<
  GalleryContext,
  "config" | "clock" | "database" | "auth" | "bus" | "limiter" | "settings" | "paths" | "tempOwner"
> & { tools?: VoiceTools };

export type GuestbookService = ReturnType<typeof createGuestbookService>;

export function createGuestbookService(deps: GuestbookDeps) {
  const tools = deps.tools ?? voiceTools(deps.clock, deps.config);

  function reader(user: AuthedUser): repo.Reader {
    return { id: user.id, isHost: user.role !== "guest" };
  }

  async function view(user: AuthedUser, rows: repo.EntryRow[]): Promise<GuestbookEntry[]> {
    const token = rows.some((r) => r.voice_path) ? encodeURIComponent(await deps.auth.mediaToken(user)) : "";
    return rows.map((r) => ({
      id: r.id,
      author: { id: r.user_id, display_name: r.display_name },
      text: r.text,
      voice_url: r.voice_path ? `/api/v1/guestbook/${r.id}/voice?t=${token}` : null,
      voice_duration_s: r.voice_path ? r.voice_duration_s : null,
      created_at: r.created_at,
      approval: r.approval,
    }));
  }

  /** GET /guestbook: newest first; pending entries only to their author and hosts. */
  async function list(
    user: AuthedUser,
    query: { limit?: string | undefined; cursor?: string | undefined },
  ): Promise<{ items: GuestbookEntry[]; next_cursor: string | null }> {
    const limit = clampLimit(query.limit, PAGE_DEFAULT);
    const before = query.cursor ? decodePageKey(query.cursor) : null;
    const rows = await repo.entriesPage(deps.database.reader, reader(user), before, limit + 1);
    const shown = rows.slice(0, limit);
    const last = shown.at(-1);
    return {
      items: await view(user, shown),
      next_cursor: rows.length > limit && last ? encodePageKey(last) : null,
    };
  }

  /** POST /guestbook: text (JSON) or text + voice (multipart). */
  async function create(user: AuthedUser, input: EntryInput): Promise<GuestbookEntry> {
    const ctx = deps;
    const settings = await ctx.settings.all();
    if (!settings.guestbook_enabled)
      throw forbidden("The guestbook is switched off for this event.", "guestbook_disabled");
    if (input.kind === "multipart" && !settings.guestbook_voice)
      throw forbidden("Voice messages are switched off for this event.", "voice_disabled");
    await ctx.limiter.hit(`social:${user.id}`, SOCIAL_WRITES_PER_MIN, 60_000);
    if (await isUploadsLocked(ctx.database.db)) throw closed();

    const id = newId();
    let text: string;
    let voice: StoredVoice | null = null;
    if (input.kind === "json") {
      const body = input.body;
      if (typeof body !== "object" || body === null || Array.isArray(body))
        throw validationFailed("body", "The body must be a JSON object with `text`.");
      const extra = Object.keys(body).find((k) => k !== "text");
      if (extra !== undefined) throw validationFailed(extra, `Unknown field: ${extra}.`);
      text = validateEntryText((body as { text?: unknown }).text, false);
    } else {
      ({ text, voice } = await readForm(id, input.parts));
    }

    const approval = await pendingApprovalFor(ctx, user);
    try {
      await ctx.database.writeTx(async (trx) => {
        if (await isUploadsLockedForShare(trx, ctx.database.dialect)) throw closed();
        await repo.insertEntry(trx, {
          id,
          user_id: user.id,
          text,
          voice_path: voice?.relPath ?? null,
          voice_mime: voice?.mime ?? null,
          voice_size_bytes: voice?.size ?? null,
          voice_duration_s: voice?.duration_s ?? null,
          approval,
          created_at: ctx.clock.iso(),
        });
      });
    } catch (err) {
      if (voice) await removeQuietly(voice.absPath);
      throw err;
    }
    // Pending entries reach hosts only (the queue); the author has the answer.
    ctx.bus.publish(
      "guestbook-entry",
      { id, user_id: user.id, approval },
      { hostsOnly: approval === "pending" },
    );
    const row = await repo.visibleEntry(ctx.database.db, reader(user), id);
    if (!row) throw new Error("guestbook entry vanished right after commit");
    const [entry] = await view(user, [row]);
    return entry as GuestbookEntry;
  }

  /** The form: `text?` before `file` (one audio file). The file is stored before anything commits. */
  async function readForm(id: string, parts: Extract<EntryInput, { kind: "multipart" }>["parts"]) {
    let rawText: string | undefined;
    const iter = parts({ fileSize: VOICE_MAX_BYTES, fieldSize: GUESTBOOK_TEXT_MAX * 4, fields: 4, files: 2 })[
      Symbol.asyncIterator
    ]();
    const next = async () => {
      try {
        return await iter.next();
      } catch (err) {
        if (err instanceof AppError) throw err;
        const code = (err as { code?: unknown }).code;
        if (code === "FST_FILES_LIMIT" || code === "FST_PARTS_LIMIT" || code === "FST_FIELDS_LIMIT")
          throw invalidMultipart(422, "The form carries `text` and one `file`, nothing else.");
        throw invalidMultipart(
          400,
          "The multipart body could not be read: missing boundary, cut off or malformed.",
        );
      }
    };
    for (let n = await next(); !n.done; n = await next()) {
      const part = n.value;
      if (part.type === "field") {
        if (part.fieldname !== "text")
          throw validationFailed(part.fieldname, `Unknown field: ${part.fieldname}.`);
        if (part.valueTruncated) throw validationFailed("text", "text is too long.");
        rawText = String(part.value);
        continue;
      }
      if (part.fieldname !== "file") {
        part.file.resume();
        throw validationFailed(part.fieldname, `Unknown field: ${part.fieldname}.`);
      }
      const text = validateEntryText(rawText, true);
      let voice: StoredVoice;
      try {
        voice = await storeVoice(deps.paths.mediaDir, part, id, tools, deps.tempOwner);
      } catch (err) {
        if (err instanceof AppError) throw err;
        throw invalidMultipart(400, "The multipart body could not be read: cut off or malformed.");
      }
      try {
        const after = await next();
        if (!after.done) {
          if (after.value.type === "file") after.value.file.resume();
          throw invalidMultipart(422, "The file is the last part of the form.");
        }
      } catch (err) {
        await removeQuietly(voice.absPath);
        throw err;
      }
      return { text, voice };
    }
    throw validationFailed("file", "A multipart guestbook entry needs a `file` part (the voice message).");
  }

  /** DELETE /guestbook/{id}: the author's own (the ban check already ran, before ownership). */
  async function deleteOwn(user: AuthedUser, id: string): Promise<void> {
    await deps.limiter.hit(`social:${user.id}`, SOCIAL_WRITES_PER_MIN, 60_000);
    await remove(user, id, "owner");
  }

  /** DELETE /host/guestbook/{id}: a host takedown, audited. */
  function takedown(actor: AuthedUser, id: string): Promise<void> {
    return remove(actor, id, "host");
  }

  async function remove(actor: AuthedUser, id: string, by: "owner" | "host"): Promise<void> {
    const { database, clock } = deps;
    const voicePath = await database.writeTx(async (trx) => {
      const row = await repo.lockLiveEntry(trx, database.dialect, id);
      if (!row) throw entryNotFound();
      if (by === "owner" && row.user_id !== actor.id)
        throw forbidden("You can only delete your own guestbook entries.", "not_owner");
      const now = clock.iso();
      await repo.markDeleted(trx, id, by, now);
      // A removal after the release rebuilds the keepsake without it.
      await bumpEpochIfReleased(trx, clock);
      if (by === "host")
        await recordAudit(trx, database, {
          actorId: actor.id,
          action: "remove_guestbook_entry",
          targetType: "guestbook",
          targetId: id,
          at: now,
          details: { author_id: row.user_id },
        });
      return row.voice_path;
    });
    deps.bus.publish("guestbook-removed", { id });
    // Whoever removed it wants the recording gone, not only hidden.
    if (voicePath) await removeQuietly(resolveMediaPath(deps.paths.mediaDir, voicePath)).catch(() => {});
  }

  /** POST /host/guestbook/{id}/approve: approving an approved entry changes nothing and answers it. */
  async function approve(actor: AuthedUser, id: string): Promise<GuestbookEntry> {
    const { database, clock } = deps;
    const changed = await database.writeTx(async (trx) => {
      const row = await repo.lockLiveEntry(trx, database.dialect, id);
      if (!row) throw entryNotFound();
      if (row.approval !== "pending") return false;
      const now = clock.iso();
      await repo.markApproved(trx, id);
      await bumpEpochIfReleased(trx, clock);
      await recordAudit(trx, database, {
        actorId: actor.id,
        action: "approve_guestbook_entry",
        targetType: "guestbook",
        targetId: id,
        at: now,
        details: { author_id: row.user_id },
      });
      return true;
    });
    if (changed) deps.bus.publish("guestbook-entry", { id, approval: "approved" });
    const row = await repo.visibleEntry(database.db, reader(actor), id);
    if (!row) throw entryNotFound();
    const [entry] = await view(actor, [row]);
    return entry as GuestbookEntry;
  }

  /** GET /guestbook/{id}/voice: the recording, to whoever may see the entry. */
  async function voiceFile(user: AuthedUser, id: string): Promise<{ path: string; mime: string }> {
    const row = await repo.visibleEntry(deps.database.reader, reader(user), id);
    if (!row?.voice_path || !row.voice_mime) throw notFound("This voice message does not exist.");
    return { path: resolveMediaPath(deps.paths.mediaDir, row.voice_path), mime: row.voice_mime };
  }

  return { list, create, deleteOwn, takedown, approve, voiceFile };
}
