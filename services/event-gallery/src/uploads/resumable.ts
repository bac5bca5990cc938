import { randomBytes } from "node:crypto";
import { copyFile, mkdir, open, rename, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { Readable } from "node:stream";
import { AppError, badRequest, notFound } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { AuthedUser, GalleryContext } from "../context.js";
import type { FeedItem } from "../feed/serialize.js";
import { normalizeHashtags } from "./hashtags.js";
import {
  CLIENT_KEY_RE,
  type FormFields,
  type Ingest,
  type IngestDeps,
  payloadTooLarge,
  quotaCeiling,
  quotaExceeded,
  removedByHost,
  unsupportedType,
  uploadsLocked,
  validateCaption,
} from "./ingest.js";
import * as repo from "./repository.js";
import { SNIFF_BYTES, sniffMediaType } from "./sniff.js";
import { fsyncDir, originalRelPath, removeQuietly, resolveMediaPath } from "./storage.js";

/** Partial bytes of unfinished tus uploads live here, outside the media folder (not counted as media). */
export const PARTIALS_DIR = "partials";
export const partialsDir = (dataDir: string) => join(dataDir, PARTIALS_DIR);
const KEY_RE = /^[0-9a-f]{32}$/;
const OVERFLOW_DRAIN_BYTES = 1024 * 1024;

/**
 * One writer per upload key in this process. A new request for a key cuts off the one before it
 * (a phone that lost its connection comes back while the server still waits on the dead request)
 * and waits until it has flushed, so the offset it then reads is final.
 */
export class UploadKeyLocks {
  private readonly held = new Map<string, { cancel: () => void; released: Promise<void> }>();

  async acquire(key: string, cancel: () => void): Promise<() => void> {
    for (let h = this.held.get(key); h; h = this.held.get(key)) {
      h.cancel();
      await h.released;
    }
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.held.set(key, { cancel, released });
    return () => {
      this.held.delete(key);
      release();
    };
  }
}

/**
 * tus `Upload-Metadata`: comma-separated `key base64value` pairs (value optional). Anything else
 * is a 400 rather than a guess.
 */
export function parseUploadMetadata(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (header === undefined || header.trim() === "") return out;
  for (const pair of header.split(",")) {
    const m = /^\s*([^\s,]+)(?: ([A-Za-z0-9+/]*={0,2}))?\s*$/.exec(pair);
    if (!m?.[1] || (m[2]?.length !== undefined && m[2].length % 4 !== 0))
      throw invalidBody("Upload-Metadata must be comma-separated `key base64` pairs.");
    if (m[1] in out) throw invalidBody(`Upload-Metadata repeats the key ${m[1]}.`);
    out[m[1]] = Buffer.from(m[2] ?? "", "base64").toString("utf8");
  }
  return out;
}

export const invalidBody = (message: string) => badRequest("invalid_body", message);
const unknownKey = () => notFound("No such upload.");
const offsetMismatch = (offset: number) =>
  new AppError(
    409,
    "offset_mismatch",
    "Upload-Offset does not match the bytes received so far.",
    { offset },
    { "upload-offset": String(offset) },
  );

export interface ResumableState {
  key: string;
  offset: number;
  length: number;
  expiresAt: number;
  /** Set once the bytes became an upload row. */
  uploadId: string | null;
}

export type CreateResult =
  | { status: 201; state: ResumableState }
  | { status: 200; state: ResumableState; upload: FeedItem };

export type ResumableDeps = Pick<
  GalleryContext,
  "database" | "clock" | "config" | "settings" | "limiter" | "disk" | "logger" | "paths"
> & {
  ingest: Pick<Ingest, "commitUpload" | "itemFor">;
  announce: IngestDeps["announce"];
};

export type ResumableUploads = ReturnType<typeof createResumableUploads>;

/** The tus routes' rules; one per app, so one writer per upload key in this process. */
export function createResumableUploads(deps: ResumableDeps) {
  /** Unfinished uploads are removed with their bytes this long after creation. */
  const ttlMs = deps.config.GALLERY_RESUMABLE_TTL_HOURS * 3_600_000;
  const locks = new UploadKeyLocks();

  /**
   * POST /uploads. The same `client_upload_id` of the same user answers the same key while
   * unfinished and the finished row (200) once done. Refusals as POST /upload; the declared length
   * is checked against the route limit and the quota before any byte arrives.
   */
  async function createResumable(
    user: AuthedUser,
    input: { length: number; metadata: Record<string, string> },
  ): Promise<CreateResult> {
    const { db } = deps.database;
    const clientKey = input.metadata.client_upload_id;
    if (clientKey === undefined || !CLIENT_KEY_RE.test(clientKey))
      throw invalidBody("Upload-Metadata needs client_upload_id: 1 to 128 printable ASCII characters.");
    const caption = validateCaption(input.metadata.caption ?? "");
    const hashtags = normalizeHashtags(input.metadata.hashtags ?? "");

    const finished = await repo.findByClientKey(db, user.id, clientKey);
    if (finished?.deleted_by === "host") throw removedByHost();
    const prior = await repo.findResumableByClientKey(db, user.id, clientKey);
    const now = deps.clock.now();
    if (finished) {
      // The key is kept for the replay while its row lives; otherwise a fresh one is handed out.
      const state = prior?.upload_id === finished.id ? stateOf(prior, Number(prior.upload_length)) : null;
      return {
        status: 200,
        state: state ?? { key: "", offset: 0, length: 0, expiresAt: now, uploadId: finished.id },
        upload: await deps.ingest.itemFor(user, finished.id),
      };
    }
    if (prior && prior.upload_id === null && Number(prior.expires_at) > now) {
      const offset = await partialSize(prior.key);
      if (offset !== null) return { status: 201, state: stateOf(prior, offset) };
    }

    const settings = await deps.settings.all();
    await deps.limiter.hit(`upload:${user.id}`, settings.upload_rate_per_hour, 3_600_000);
    if (await repo.isUploadsLocked(db)) throw uploadsLocked();
    if (input.length > settings.max_upload_bytes) throw payloadTooLarge(settings.max_upload_bytes);
    const { free_bytes } = await deps.disk.stat();
    const ceiling = quotaCeiling(
      free_bytes,
      settings.quota_tolerance,
      await repo.activeUploaders(db, user.id),
    );
    if ((await repo.userUploadBytes(db, user.id)) + input.length > ceiling) throw quotaExceeded(ceiling);

    const key = randomBytes(16).toString("hex");
    const row = {
      key,
      user_id: user.id,
      client_upload_id: clientKey,
      upload_length: input.length,
      caption,
      hashtags: JSON.stringify(hashtags),
      created_at: deps.clock.iso(),
      expires_at: now + ttlMs,
    };
    const path = partialPath(deps.paths.dataDir, key);
    await mkdir(dirname(path), { recursive: true });
    await (await open(path, "wx")).close();
    try {
      await deps.database.writeTx(async (trx) => {
        // A stale key for the same client key (expired, or its upload deleted by the guest) goes first.
        if (prior) await repo.deleteResumable(trx, prior.key);
        await repo.insertResumable(trx, row);
      });
    } catch (err) {
      await removeQuietly(path);
      // A concurrent creation with the same key won: resume that one.
      if (deps.database.dialect.isUniqueViolation(err)) {
        const winner = await repo.findResumableByClientKey(db, user.id, clientKey);
        if (winner && winner.upload_id === null)
          return { status: 201, state: stateOf(winner, (await partialSize(winner.key)) ?? 0) };
      }
      throw err;
    }
    if (prior) await removeQuietly(partialPath(deps.paths.dataDir, prior.key));
    return { status: 201, state: stateOf({ ...row, upload_id: null }, 0) };
  }

  /**
   * HEAD /uploads/{key}: 404 for another user's, an unknown or an expired key. A client asks only
   * when it resumes, so a request of the same key still open here is a dead one: it is cut off and
   * flushed first, so the offset answered is final.
   */
  async function resumableStatus(user: AuthedUser, key: string): Promise<ResumableState> {
    (await locks.acquire((await ownedRow(user, key)).key, () => {}))();
    const row = await ownedRow(user, key);
    if (row.upload_id !== null) return stateOf(row, Number(row.upload_length));
    const offset = await partialSize(key);
    if (offset === null) throw unknownKey();
    return stateOf(row, offset);
  }

  /**
   * PATCH /uploads/{key}: append the body at `offset`. Bytes that arrived before a cut are kept
   * (the client resumes from them). The request that completes the upload commits it through the
   * same path as POST /upload; an empty PATCH at the full length retries a commit that was refused
   * (the event was locked) and replays a finished one.
   */
  async function appendResumable(
    user: AuthedUser,
    req: { key: string; offset: number; declaredBytes: number | null; body: Readable },
  ): Promise<AppendResult> {
    const { key, body } = req;
    const row = await ownedRow(user, key);
    const release = await locks.acquire(row.key, () => body.destroy());
    try {
      // Re-read: the request this one replaced may have moved the upload on.
      return await appendLocked(user, await ownedRow(user, key), req);
    } finally {
      release();
    }
  }

  async function appendLocked(
    user: AuthedUser,
    row: repo.ResumableRow,
    {
      key,
      offset,
      declaredBytes,
      body,
    }: { key: string; offset: number; declaredBytes: number | null; body: Readable },
  ): Promise<AppendResult> {
    const length = Number(row.upload_length);
    if (row.upload_id !== null) {
      return {
        status: 200,
        state: stateOf(row, length),
        upload: await deps.ingest.itemFor(user, row.upload_id),
      };
    }
    if (await repo.isUploadsLocked(deps.database.db)) {
      body.resume();
      throw uploadsLocked();
    }
    const path = partialPath(deps.paths.dataDir, key);
    const current = await partialSize(key);
    if (current === null) throw unknownKey();
    if (offset !== current) {
      body.resume();
      throw offsetMismatch(current);
    }
    if (declaredBytes !== null && offset + declaredBytes > length) {
      body.resume();
      throw invalidBody("The body runs past Upload-Length.");
    }
    const written = await appendBody(path, offset, length - offset, body);
    const state = stateOf(row, offset + written);
    if (state.offset < length) return { status: 204, state };
    return finishResumable(user, row, state);
  }

  /** DELETE /uploads/{key}: an unfinished upload loses its bytes; a finished one only its key. */
  async function terminateResumable(user: AuthedUser, key: string): Promise<void> {
    const row = await ownedRow(user, key);
    await repo.deleteResumable(deps.database.db, key);
    await removeQuietly(partialPath(deps.paths.dataDir, key));
    deps.logger.info({ upload_key: row.key }, "resumable upload terminated");
  }

  async function partialSize(key: string): Promise<number | null> {
    try {
      return (await stat(partialPath(deps.paths.dataDir, key))).size;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
  }

  async function ownedRow(user: AuthedUser, key: string): Promise<repo.ResumableRow> {
    if (!KEY_RE.test(key)) throw unknownKey();
    const row = await repo.findResumable(deps.database.db, key);
    if (!row || row.user_id !== user.id) throw unknownKey();
    if (row.upload_id === null && Number(row.expires_at) <= deps.clock.now()) throw unknownKey();
    return row;
  }

  async function finishResumable(
    user: AuthedUser,
    row: repo.ResumableRow,
    state: ResumableState,
  ): Promise<AppendResult> {
    const partial = partialPath(deps.paths.dataDir, row.key);
    const head = Buffer.alloc(Math.min(SNIFF_BYTES, state.length));
    const fh = await open(partial, "r");
    try {
      await fh.read(head, 0, head.length, 0);
    } finally {
      await fh.close();
    }
    const type = head.length > 0 ? await sniffMediaType(head) : null;
    if (!type) {
      await repo.deleteResumable(deps.database.db, row.key);
      await removeQuietly(partial);
      throw unsupportedType();
    }

    const id = newId();
    const relPath = originalRelPath(id, type.ext);
    const absPath = resolveMediaPath(deps.paths.mediaDir, relPath);
    await moveFile(partial, absPath);
    const form: FormFields = {
      clientKey: row.client_upload_id,
      caption: row.caption,
      hashtags: JSON.parse(row.hashtags) as string[],
    };
    const settings = await deps.settings.all();
    const { free_bytes } = await deps.disk.stat();
    let outcome: { replayOf?: string };
    try {
      outcome = await deps.ingest.commitUpload(
        user,
        form,
        id,
        { relPath, size: state.length, type },
        { freeBytes: free_bytes, tolerance: settings.quota_tolerance },
        (trx, o) => repo.markResumableDone(trx, row.key, o.replayOf ?? id),
      );
    } catch (err) {
      if (err instanceof AppError && err.code === "uploads_locked") {
        // Reversible: the bytes stay so the commit can be retried when the event reopens.
        await moveFile(absPath, partial);
      } else {
        await removeQuietly(absPath);
        if (err instanceof AppError) await repo.deleteResumable(deps.database.db, row.key);
      }
      throw err;
    }
    const uploadId = outcome.replayOf ?? id;
    const done = { ...state, uploadId };
    if (outcome.replayOf) {
      await removeQuietly(absPath);
      return { status: 200, state: done, upload: await deps.ingest.itemFor(user, uploadId) };
    }
    await deps.announce(id, user);
    deps.logger.info({ upload_id: id, bytes: state.length }, "resumable upload committed");
    return { status: 201, state: done, upload: await deps.ingest.itemFor(user, id) };
  }

  return { createResumable, resumableStatus, appendResumable, terminateResumable };
}

export type AppendResult =
  | { status: 204; state: ResumableState }
  | { status: 200 | 201; state: ResumableState; upload: FeedItem };

/**
 * Remove keys whose time is up (unfinished: with their bytes). Returns how many; the caller logs.
 * Bounded per call so a large backlog never holds the loop for long.
 */
export async function sweepExpiredResumables(
  deps: Pick<GalleryContext, "database" | "clock" | "paths">,
  limit = 500,
): Promise<number> {
  const rows = await repo.expiredResumables(deps.database.db, deps.clock.now(), limit);
  for (const row of rows) {
    await repo.deleteResumable(deps.database.db, row.key);
    await removeQuietly(partialPath(deps.paths.dataDir, row.key));
  }
  return rows.length;
}

const partialPath = (dataDir: string, key: string) => join(partialsDir(dataDir), key);

function stateOf(row: repo.ResumableRow, offset: number): ResumableState {
  return {
    key: row.key,
    offset,
    length: Number(row.upload_length),
    expiresAt: Number(row.expires_at),
    uploadId: row.upload_id,
  };
}

/**
 * Write the body at `offset`, never past `room` bytes; what arrived is fsynced even when the
 * client is cut off mid-body (that is the offset it resumes from). Returns the bytes written.
 */
async function appendBody(path: string, offset: number, room: number, body: Readable): Promise<number> {
  const fh = await open(path, "r+");
  let written = 0;
  let failure: unknown = null;
  let discarded = 0;
  try {
    for await (const chunk of body) {
      const buf = chunk as Buffer;
      if (failure || written + buf.length > room) {
        // Drain a little so the 400 can be read; a client that keeps sending is cut off.
        failure = invalidBody("The body runs past Upload-Length.");
        discarded += buf.length;
        if (discarded > OVERFLOW_DRAIN_BYTES) body.destroy();
        continue;
      }
      await fh.write(buf, 0, buf.length, offset + written);
      written += buf.length;
    }
  } catch (err) {
    // The client went away or fell silent: keep what arrived.
    if (!(failure instanceof AppError)) failure = err;
  }
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
  if (failure instanceof AppError) throw failure;
  if (failure) throw new ClientGone();
  return written;
}

/** The request body ended early (cut connection, idle timeout): nothing to answer. */
export class ClientGone extends Error {
  constructor() {
    super("the client stopped sending");
  }
}

/** Rename (same filesystem) or copy and fsync; the destination folder is fsynced either way. */
async function moveFile(from: string, to: string): Promise<void> {
  await mkdir(dirname(to), { recursive: true });
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EXDEV") throw err;
    await copyFile(from, to);
    const fh = await open(to, "r");
    await fh.sync().finally(() => fh.close());
    await removeQuietly(from);
  }
  await fsyncDir(dirname(to));
}
