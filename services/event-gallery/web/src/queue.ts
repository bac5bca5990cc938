import { type DetailedError, Upload } from "tus-js-client";
import { API, session } from "./api.js";
import { store } from "./store.js";

/**
 * The upload queue, over tus (resumable uploads at /api/v1/uploads). Every file is kept in
 * IndexedDB with its idempotency key (client_upload_id) and its upload URL until the server has
 * it, so a reload, a sleeping phone, a lost connection or a server restart continue from the last
 * byte the server acknowledged; a retry never creates a second upload (the server resumes the
 * same key); files refused with `uploads_locked` keep their blob and go again on `event-opened`.
 */

export type QueueStatus = "queued" | "uploading" | "waiting" | "done" | "failed" | "locked";

export interface QueueItem {
  id: string;
  name: string;
  size: number;
  type: string;
  caption: string;
  hashtags: string;
  status: QueueStatus;
  /** Bytes the server has acknowledged. */
  sent: number;
  /** A server error code (`quota_exceeded`, ...) when failed; the view translates it. */
  errorCode?: string;
  /** Done, and waiting for a host's approval (pre-moderation). */
  pending?: boolean;
  error?: string;
}

interface Stored {
  id: string;
  file: Blob;
  name: string;
  caption: string;
  hashtags: string;
  createdAt: number;
  /** The tus upload URL once the server created it: resuming starts from its offset. */
  uploadUrl?: string;
}

const DB_NAME = "gallery-uploads";
const STORE = "queue";
/** At most this many files wait in the queue; more are refused with a message. */
export const QUEUE_CAP = 500;
/** Well under a 100 MB proxy body cap; small enough that a cut loses little. */
export const CHUNK_BYTES = 8 * 1024 * 1024;
/** tus-js-client's own retries while online; then the queue backs off (below). */
const RETRY_DELAYS = [0, 1000, 3000, 5000];
const MAX_BACKOFF_MS = 60_000;

export const queue = store<QueueItem[]>([]);
const blobs = new Map<string, Blob>();
/** The queued file itself (for its thumbnail); gone once the server has it. */
export const blobOf = (id: string): Blob | undefined => blobs.get(id);
let running = false;
/** Wakes a waiting upload at once (online event, page visible again, event reopened). */
let wake: (() => void) | null = null;
let onUploaded: (() => void) | null = null;

function idb(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE, { keyPath: "id" });
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function tx<T>(mode: IDBTransactionMode, fn: (s: IDBObjectStore) => IDBRequest<T>): Promise<T> {
  const db = await idb();
  return new Promise((resolve, reject) => {
    const t = db.transaction(STORE, mode);
    const req = fn(t.objectStore(STORE));
    t.oncomplete = () => {
      db.close();
      resolve(req.result);
    };
    t.onerror = () => {
      db.close();
      reject(t.error);
    };
  });
}

async function patchStored(id: string, patch: Partial<Stored>): Promise<void> {
  const row = await tx<Stored | undefined>("readonly", (s) => s.get(id) as IDBRequest<Stored | undefined>);
  if (row) await tx("readwrite", (s) => s.put({ ...row, ...patch }));
}

const update = (id: string, patch: Partial<QueueItem>) =>
  queue.set(queue.value.map((q) => (q.id === id ? { ...q, ...patch } : q)));

const itemOf = (r: Stored): QueueItem => ({
  id: r.id,
  name: r.name,
  size: r.file.size,
  type: r.file.type,
  caption: r.caption,
  hashtags: r.hashtags,
  status: "queued",
  sent: 0,
});

let listening = false;
function listenForNetwork(): void {
  if (listening || typeof window === "undefined") return;
  listening = true;
  window.addEventListener("online", () => wake?.());
  // A phone waking up: try at once instead of waiting out the back-off.
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") wake?.();
  });
}

/** Restore unfinished uploads after a reload and continue with them. */
export async function restoreQueue(uploaded: () => void): Promise<void> {
  onUploaded = uploaded;
  listenForNetwork();
  const rows = (await tx<Stored[]>("readonly", (s) => s.getAll() as IDBRequest<Stored[]>)).sort(
    (a, b) => a.createdAt - b.createdAt,
  );
  const known = new Set(queue.value.map((q) => q.id));
  const restored: QueueItem[] = [];
  for (const r of rows) {
    if (known.has(r.id)) continue;
    blobs.set(r.id, r.file);
    restored.push(itemOf(r));
  }
  if (restored.length) queue.set([...queue.value, ...restored]);
  pump();
}

export async function enqueue(files: File[], caption: string, hashtags: string): Promise<void> {
  listenForNetwork();
  const pending = queue.value.filter((q) => q.status !== "done").length;
  if (pending + files.length > QUEUE_CAP) throw new Error(`At most ${QUEUE_CAP} files can wait at once.`);
  for (const file of files) {
    const row: Stored = {
      id: crypto.randomUUID(),
      file,
      name: file.name,
      caption,
      hashtags,
      createdAt: Date.now(),
    };
    await tx("readwrite", (s) => s.put(row));
    blobs.set(row.id, file);
    queue.set([...queue.value, itemOf(row)]);
  }
  pump();
}

/** Remove a file from the queue; an upload the server holds unfinished is terminated there. */
export async function removeItem(id: string): Promise<void> {
  const row = await tx<Stored | undefined>("readonly", (s) => s.get(id) as IDBRequest<Stored | undefined>);
  await tx("readwrite", (s) => s.delete(id));
  blobs.delete(id);
  queue.set(queue.value.filter((q) => q.id !== id));
  if (row?.uploadUrl)
    fetch(row.uploadUrl, { method: "DELETE", headers: tusHeaders() }).catch(() => {
      // The server expires it on its own.
    });
}

export function retryItem(id: string): void {
  update(id, { status: "queued", error: undefined, errorCode: undefined });
  pump();
}

/** The event reopened: files that were refused while locked go again, from where they stopped. */
export function resumeLocked(): void {
  let any = false;
  queue.set(
    queue.value.map((q) => {
      if (q.status !== "locked") return q;
      any = true;
      return { ...q, status: "queued" as const };
    }),
  );
  if (any) pump();
}

export function clearDone(): void {
  queue.set(queue.value.filter((q) => q.status !== "done"));
}

function tusHeaders(): Record<string, string> {
  const token = session.token();
  return { "Tus-Resumable": "1.0.0", ...(token ? { Authorization: `Bearer ${token}` } : {}) };
}

type Outcome =
  | { kind: "done"; pending?: boolean }
  | { kind: "locked" }
  | { kind: "failed"; code?: string; message: string }
  /** Network trouble or a busy server: wait, then resume from the acknowledged offset. */
  | { kind: "again" };

interface ErrorBody {
  error?: { code?: string; message?: string };
  upload?: { approval?: string };
}

/** The finished upload's answer: done, and whether it waits for approval. */
const doneWith = (body: ErrorBody): Outcome => ({
  kind: "done",
  pending: body.upload?.approval === "pending",
});

const parse = (text: string | undefined): ErrorBody => {
  try {
    return JSON.parse(text ?? "") as ErrorBody;
  } catch {
    return {};
  }
};

function outcomeOfError(err: Error): Outcome {
  const res = (err as DetailedError).originalResponse;
  const status = res?.getStatus() ?? 0;
  const body = parse(res?.getBody());
  // A replayed creation (200 with the finished upload) has no resumable URL left to follow.
  if (status === 200 && body.upload) return doneWith(body);
  if (body.error?.code === "uploads_locked") return { kind: "locked" };
  if (status === 0 || status >= 500 || status === 429 || status === 409 || status === 423)
    return { kind: "again" };
  return { kind: "failed", code: body.error?.code, message: body.error?.message ?? `HTTP ${status}` };
}

/**
 * One attempt with tus-js-client: resumes from the stored URL (HEAD gives the offset; an expired
 * key is created anew with the same client_upload_id).
 */
async function attempt(item: QueueItem, blob: Blob, uploadUrl: string | undefined): Promise<Outcome> {
  const outcome = await new Promise<Outcome>((resolve) => {
    const upload = new Upload(blob, {
      endpoint: `${API}/uploads`,
      uploadUrl: uploadUrl ?? null,
      chunkSize: CHUNK_BYTES,
      retryDelays: RETRY_DELAYS,
      storeFingerprintForResuming: false,
      metadata: {
        client_upload_id: item.id,
        caption: item.caption,
        hashtags: item.hashtags,
        filename: item.name,
      },
      onBeforeRequest(req) {
        // tus-js-client sets Tus-Resumable itself (a second one would be appended, not replaced).
        const token = session.token();
        if (token) req.setHeader("Authorization", `Bearer ${token}`);
      },
      onUploadUrlAvailable() {
        if (upload.url) patchStored(item.id, { uploadUrl: upload.url }).catch(() => {});
      },
      onAfterResponse(req, res) {
        // A resume's HEAD says what the server already holds: show it now (after a reload the
        // item starts at 0), not only when the next chunk completes.
        const offset = Number.parseInt(res.getHeader("Upload-Offset") ?? "", 10);
        if (req.getMethod() === "HEAD" && Number.isFinite(offset)) update(item.id, { sent: offset });
      },
      onChunkComplete(_chunk, accepted) {
        update(item.id, { sent: accepted });
      },
      onSuccess({ lastResponse }) {
        // The commit's answer carries the upload; a HEAD that found all bytes does not, and the
        // commit may still be due (it was refused while the event was locked).
        const finished = parse(lastResponse.getBody());
        if (finished.upload) return resolve(doneWith(finished));
        commitComplete(upload.url, item.size).then(resolve, () => resolve({ kind: "again" }));
      },
      onError(err) {
        resolve(outcomeOfError(err));
      },
    });
    upload.start();
  });
  return outcome;
}

/** An empty PATCH at the full length commits a complete upload (or replays the finished one). */
async function commitComplete(url: string | null, size: number): Promise<Outcome> {
  if (!url) return { kind: "again" };
  const res = await fetch(url, {
    method: "PATCH",
    headers: {
      ...tusHeaders(),
      "Upload-Offset": String(size),
      "Content-Type": "application/offset+octet-stream",
    },
  });
  const body = parse(await res.text());
  if (res.ok && body.upload) return doneWith(body);
  if (body.error?.code === "uploads_locked") return { kind: "locked" };
  if (res.status >= 500 || res.status === 429) return { kind: "again" };
  return { kind: "failed", code: body.error?.code, message: body.error?.message ?? `HTTP ${res.status}` };
}

/** Wait `ms`, or less when the network comes back or the page becomes visible. */
function backOff(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      wake = null;
      resolve();
    };
    const timer = setTimeout(done, ms);
    wake = done;
  });
}

async function uploadOne(item: QueueItem): Promise<void> {
  const blob = blobs.get(item.id);
  if (!blob) return removeItem(item.id);
  for (let round = 0; ; round++) {
    // Offline: do not spend attempts, wait for the online event (or the back-off, in case the
    // browser's flag is wrong).
    if (typeof navigator !== "undefined" && navigator.onLine === false) {
      update(item.id, { status: "waiting" });
      await backOff(Math.min(MAX_BACKOFF_MS, 1000 * 2 ** round));
      continue;
    }
    update(item.id, { status: "uploading" });
    const row = await tx<Stored | undefined>(
      "readonly",
      (s) => s.get(item.id) as IDBRequest<Stored | undefined>,
    );
    const before = queue.value.find((q) => q.id === item.id)?.sent ?? 0;
    const outcome = await attempt(item, blob, row?.uploadUrl);
    // Progress was made: the next wait starts short again.
    if ((queue.value.find((q) => q.id === item.id)?.sent ?? 0) > before) round = -1;
    if (outcome.kind === "done") {
      await tx("readwrite", (s) => s.delete(item.id));
      blobs.delete(item.id);
      update(item.id, { status: "done", sent: item.size, pending: outcome.pending === true });
      onUploaded?.();
      return;
    }
    if (outcome.kind === "locked") return update(item.id, { status: "locked" });
    if (outcome.kind === "failed")
      return update(item.id, { status: "failed", errorCode: outcome.code, error: outcome.message });
    update(item.id, { status: "waiting" });
    await backOff(Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.min(round, 6)));
  }
}

async function pump(): Promise<void> {
  if (running) return;
  running = true;
  try {
    for (;;) {
      const next = queue.value.find((q) => q.status === "queued");
      if (!next) break;
      await uploadOne(next);
    }
  } finally {
    running = false;
  }
}
