import { mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";
import { type Readable, Writable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { AppError, conflict, forbidden, validationFailed } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { AuthedUser, GalleryContext } from "../context.js";
import { type FeedItem, loadFeedItems } from "../feed/serialize.js";
import { pendingApprovalFor } from "../premoderation/rules.js";
import { normalizeHashtags } from "./hashtags.js";
import * as repo from "./repository.js";
import { SNIFF_BYTES, type SniffedType, sniffMediaType } from "./sniff.js";
import { originalRelPath, publishFile, removeQuietly, resolveMediaPath } from "./storage.js";
import { ownedTempPath } from "./temp-owners.js";

export const CAPTION_MAX_CHARS = 2000;
/** Byte bound on any text field while streaming (a caption of 2000 four-byte characters fits). */
export const FIELD_MAX_BYTES = CAPTION_MAX_CHARS * 4;
export const CLIENT_KEY_RE = /^[\x21-\x7e]{1,128}$/;
const KNOWN_FIELDS = new Set(["client_upload_id", "caption", "hashtags"]);

export const uploadsLocked = () =>
  forbidden(
    "Uploads are locked for this event; keep the file and try again when it reopens.",
    "uploads_locked",
  );
export const quotaExceeded = (limit: number) =>
  new AppError(413, "quota_exceeded", "Your upload quota for this event is used up.", { limit });
export const payloadTooLarge = (limit: number) =>
  new AppError(413, "payload_too_large", "The file is larger than this event allows.", { limit });
/** Room for the text fields and multipart framing around the file in a declared body length. */
const FORM_OVERHEAD_BYTES = 64 * 1024 + 64 * FIELD_MAX_BYTES;
export const removedByHost = () =>
  conflict("removed_by_host", "The hosts removed the upload sent with this key; it cannot be sent again.");

export interface IngestResult {
  status: 200 | 201;
  upload: FeedItem;
}

export interface FormFields {
  clientKey: string | null;
  caption: string;
  hashtags: string[];
}

export function validateCaption(raw: string, field = "caption"): string {
  const caption = raw.trim();
  if ([...caption].length > CAPTION_MAX_CHARS)
    throw validationFailed(field, `A caption may have at most ${CAPTION_MAX_CHARS} characters.`);
  return caption;
}

/** floor(free_disk * quota_tolerance / active_uploaders); active counts the uploader. */
export const quotaCeiling = (freeBytes: number, tolerance: number, activeUploaders: number) =>
  Math.floor((freeBytes * tolerance) / Math.max(1, activeUploaders));

/**
 * One part of a multipart form as ingest reads it. The route passes @fastify/multipart's parts,
 * which have this shape; the domain module stays free of the HTTP framework's types.
 */
export type FormPart =
  | { type: "field"; fieldname: string; value: unknown; valueTruncated: boolean }
  | FilePart;
export interface FilePart {
  type: "file";
  fieldname: string;
  file: Readable & { truncated: boolean };
}

export type IngestDeps = Pick<
  GalleryContext,
  "database" | "clock" | "settings" | "limiter" | "disk" | "auth" | "paths" | "tempOwner"
> & {
  /** Tells the stream (and the hosts) about a committed upload (premoderation/rules.ts). */
  announce(uploadId: string, user: AuthedUser): Promise<void>;
};

export type Ingest = ReturnType<typeof createIngest>;

/** The upload commit both upload paths share, and POST /upload's streaming ingest in front of it. */
export function createIngest(deps: IngestDeps) {
  /**
   * POST /upload: stream one multipart upload to a temp file in the originals folder, then commit.
   * Text fields must come before `file`. Every refusal or failure leaves no file, row or quota charge.
   */
  async function ingestUpload(
    user: AuthedUser,
    parts: (limits: {
      fileSize: number;
      fieldSize: number;
      fields: number;
      files: number;
    }) => AsyncIterable<FormPart>,
    /** The request's Content-Length, when sent: a body that cannot fit is refused unread. */
    declaredBytes: number | null = null,
  ): Promise<IngestResult> {
    const { db } = deps.database;
    const settings = await deps.settings.all();
    await deps.limiter.hit(`upload:${user.id}`, settings.upload_rate_per_hour, 3_600_000);
    if (await repo.isUploadsLocked(db)) throw uploadsLocked();

    // Quota before any byte is stored: the file limit is whichever is smaller, the route limit or
    // what the quota still allows (the commit re-checks under the user's row lock).
    const { free_bytes } = await deps.disk.stat();
    const ceiling = quotaCeiling(
      free_bytes,
      settings.quota_tolerance,
      await repo.activeUploaders(db, user.id),
    );
    const used = await repo.userUploadBytes(db, user.id);
    const remaining = ceiling - used;
    if (remaining <= 0) throw quotaExceeded(ceiling);
    const fileLimit = Math.min(settings.max_upload_bytes, remaining);
    if (declaredBytes !== null && declaredBytes > fileLimit + FORM_OVERHEAD_BYTES)
      throw fileLimit < settings.max_upload_bytes ? quotaExceeded(ceiling) : payloadTooLarge(fileLimit);

    const form: FormFields = { clientKey: null, caption: "", hashtags: [] };
    const rawTags: string[] = [];
    // files: 2 lets a second file part through busboy so it is refused by name, not dropped.
    const partsIter = parts({ fileSize: fileLimit, fieldSize: FIELD_MAX_BYTES, fields: 64, files: 2 })[
      Symbol.asyncIterator
    ]();
    for (
      let next = await readBody(() => partsIter.next());
      !next.done;
      next = await readBody(() => partsIter.next())
    ) {
      const part = next.value;
      if (part.type === "field") {
        if (!KNOWN_FIELDS.has(part.fieldname))
          throw validationFailed(part.fieldname, `Unknown field: ${part.fieldname}.`);
        if (part.valueTruncated) throw validationFailed(part.fieldname, `${part.fieldname} is too long.`);
        const value = String(part.value);
        if (part.fieldname === "client_upload_id") form.clientKey = value;
        else if (part.fieldname === "caption") form.caption = value;
        else rawTags.push(value);
        continue;
      }
      if (part.fieldname !== "file")
        throw validationFailed(part.fieldname, `Unknown field: ${part.fieldname}.`);
      if (form.clientKey !== null && !CLIENT_KEY_RE.test(form.clientKey))
        throw validationFailed(
          "client_upload_id",
          "client_upload_id must be 1 to 128 printable ASCII characters.",
        );
      form.caption = validateCaption(form.caption);
      form.hashtags = normalizeHashtags(rawTags);
      return receiveFile(user, part, form, () => noPartAfterFile(partsIter), {
        fileLimit,
        quotaBound: fileLimit < settings.max_upload_bytes,
        ceiling,
        freeBytes: free_bytes,
        tolerance: settings.quota_tolerance,
      });
    }
    throw validationFailed("file", "The form needs a file part after the text fields.");
  }

  async function receiveFile(
    user: AuthedUser,
    part: FilePart,
    form: FormFields,
    /** Reads the rest of the form once the file is stored; throws if anything follows the file. */
    afterFile: () => Promise<void>,
    bounds: Bounds,
  ): Promise<IngestResult> {
    const { db } = deps.database;
    // A sequential retry never stores the bytes a second time.
    if (form.clientKey !== null) {
      const existing = await repo.findByClientKey(db, user.id, form.clientKey);
      if (existing) {
        part.file.resume();
        if (existing.deleted_by === "host") throw removedByHost();
        return { status: 200, upload: await itemFor(user, existing.id) };
      }
    }

    const id = newId();
    const stored = await streamToOriginal(part, id, bounds);
    try {
      await afterFile();
      const outcome = await commitUpload(user, form, id, stored, bounds);
      if (outcome.replayOf) {
        await removeQuietly(stored.absPath);
        return { status: 200, upload: await itemFor(user, outcome.replayOf) };
      }
    } catch (err) {
      await removeQuietly(stored.absPath);
      // PostgreSQL: a concurrent retry with the same key won the unique index; replay the winner.
      if (form.clientKey !== null && deps.database.dialect.isUniqueViolation(err)) {
        const winner = await repo.findByClientKey(db, user.id, form.clientKey);
        if (winner?.deleted_by === "host") throw removedByHost();
        if (winner) return { status: 200, upload: await itemFor(user, winner.id) };
      }
      throw err;
    }
    await deps.announce(id, user);
    return { status: 201, upload: await itemFor(user, id) };
  }

  /**
   * Sniff the first bytes, then stream the rest into a temp file next to its final place; fsync,
   * rename, fsync the folder. Nothing is left on disk when this throws.
   */
  async function streamToOriginal(part: FilePart, id: string, bounds: Bounds): Promise<StoredOriginal> {
    const iterator = part.file[Symbol.asyncIterator]();
    const head: Buffer[] = [];
    let headBytes = 0;
    let done = false;
    while (headBytes < SNIFF_BYTES) {
      const next = await readBody(() => iterator.next());
      if (next.done) {
        done = true;
        break;
      }
      head.push(next.value as Buffer);
      headBytes += (next.value as Buffer).length;
    }
    const first = Buffer.concat(head);
    const type = first.length > 0 ? await sniffMediaType(first) : null;
    if (!type) {
      part.file.resume();
      throw unsupportedType();
    }

    const relPath = originalRelPath(id, type.ext);
    const absPath = resolveMediaPath(deps.paths.mediaDir, relPath);
    const tmp = ownedTempPath(absPath, deps.tempOwner);
    await mkdir(dirname(absPath), { recursive: true });
    const fh = await open(tmp, "wx");
    let size = 0;
    try {
      const counter = async function* () {
        yield first;
        if (done) return;
        for (
          let n = await readBody(() => iterator.next());
          !n.done;
          n = await readBody(() => iterator.next())
        )
          yield n.value as Buffer;
      };
      await pipeline(
        counter,
        new Writable({
          // Lets writev batch what arrives while a write is in flight: fewer, larger writes.
          highWaterMark: 4 * 1024 * 1024,
          write(chunk: Buffer, _enc, cb) {
            size += chunk.length;
            fh.write(chunk).then(() => cb(), cb);
          },
          writev(chunks, cb) {
            const bufs = chunks.map((c) => c.chunk as Buffer);
            for (const b of bufs) size += b.length;
            fh.writev(bufs).then(() => cb(), cb);
          },
        }),
      );
      if (part.file.truncated) {
        throw bounds.quotaBound ? quotaExceeded(bounds.ceiling) : payloadTooLarge(bounds.fileLimit);
      }
      await fh.sync();
      await fh.close();
      await publishFile(tmp, absPath);
    } catch (err) {
      await fh.close().catch(() => {});
      await removeQuietly(tmp);
      throw err;
    }
    return { relPath, absPath, size, type };
  }

  /**
   * The commit both upload paths share: lock under the share lock, idempotency, quota with the real
   * size, insert. `alsoInTx` adds the caller's own writes to the same transaction.
   */
  async function commitUpload(
    user: AuthedUser,
    form: FormFields,
    id: string,
    stored: Pick<StoredOriginal, "relPath" | "size" | "type">,
    bounds: Pick<Bounds, "freeBytes" | "tolerance">,
    alsoInTx?: (trx: typeof deps.database.db, outcome: { replayOf?: string }) => Promise<void>,
  ): Promise<{ replayOf?: string }> {
    const { dialect } = deps.database;
    const approval = await pendingApprovalFor(deps, user);
    return deps.database.writeTx(async (trx) => {
      if (await repo.isUploadsLockedForShare(trx, dialect)) throw uploadsLocked();
      if (form.clientKey !== null) {
        const existing = await repo.findByClientKey(trx, user.id, form.clientKey);
        if (existing?.deleted_by === "host") throw removedByHost();
        if (existing) {
          await alsoInTx?.(trx, { replayOf: existing.id });
          return { replayOf: existing.id };
        }
      }
      const used = await repo.userUploadBytes(trx, user.id, dialect);
      const ceiling = quotaCeiling(
        bounds.freeBytes,
        bounds.tolerance,
        await repo.activeUploaders(trx, user.id),
      );
      if (used + stored.size > ceiling) throw quotaExceeded(ceiling);
      await repo.insertUpload(
        trx,
        {
          id,
          user_id: user.id,
          client_upload_id: form.clientKey,
          caption: form.caption,
          media_type: stored.type.media_type,
          mime_type: stored.type.mime_type,
          original_path: stored.relPath,
          original_size_bytes: stored.size,
          created_at: deps.clock.iso(),
          approval,
        },
        form.hashtags,
      );
      await alsoInTx?.(trx, {});
      return {};
    });
  }

  async function itemFor(user: AuthedUser, id: string): Promise<FeedItem> {
    const [item] = await loadFeedItems(deps.database.db, [id], {
      id: user.id,
      mediaToken: await deps.auth.mediaToken(user),
    });
    if (!item) throw new Error("upload vanished right after commit");
    return item;
  }

  return { ingestUpload, commitUpload, itemFor };
}

interface Bounds {
  fileLimit: number;
  /** The quota, not the route limit, set fileLimit. */
  quotaBound: boolean;
  ceiling: number;
  freeBytes: number;
  tolerance: number;
}

export interface StoredOriginal {
  relPath: string;
  absPath: string;
  size: number;
  type: SniffedType;
}

export const unsupportedType = () =>
  new AppError(
    415,
    "unsupported_media_type",
    "Only JPEG, PNG, WebP, GIF, HEIC/HEIF, AVIF, MP4, MOV and WebM files are accepted.",
  );

const invalidMultipart = (status: 400 | 422, message: string) =>
  new AppError(status, "invalid_multipart", message);

/**
 * A read from the multipart body. What the parser cannot read (no or empty boundary, no closing
 * boundary, a cut or malformed body) is the client's error, answered 400, never a 500.
 */
async function readBody<T>(next: () => Promise<T>): Promise<T> {
  try {
    return await next();
  } catch (err) {
    if (err instanceof AppError) throw err;
    const code = (err as { code?: unknown }).code;
    if (code === "FST_FILES_LIMIT") throw invalidMultipart(422, "A form carries one file part.");
    if (code === "FST_PARTS_LIMIT" || code === "FST_FIELDS_LIMIT")
      throw invalidMultipart(422, "The form has too many parts.");
    throw invalidMultipart(
      400,
      "The multipart body could not be read: missing boundary, cut off or malformed.",
    );
  }
}

/** The file is the last part: a second file, or a field after it, is refused with the rule. */
async function noPartAfterFile(parts: AsyncIterator<FormPart>): Promise<void> {
  const next = await readBody(() => parts.next());
  if (next.done) return;
  if (next.value.type === "file") {
    next.value.file.resume();
    throw invalidMultipart(422, "A form carries one file part; this one has two.");
  }
  throw invalidMultipart(422, `Text fields go before the file; "${next.value.fieldname}" came after it.`);
}
