import { API, session } from "./api.js";
import { store } from "./store.js";

/**
 * The upload queue. Every file is kept in IndexedDB with its idempotency key (client_upload_id)
 * until the server has it, so a reload or a lost connection resumes where it stopped, a retry never
 * creates a second upload, and files refused with `uploads_locked` wait for `event-opened`.
 */

export type QueueStatus = "queued" | "uploading" | "done" | "failed" | "locked";

export interface QueueItem {
  id: string;
  name: string;
  size: number;
  caption: string;
  hashtags: string;
  status: QueueStatus;
  sent: number;
  error?: string;
}

interface Stored {
  id: string;
  file: Blob;
  name: string;
  caption: string;
  hashtags: string;
  createdAt: number;
}

const DB_NAME = "gallery-uploads";
const STORE = "queue";
/** At most this many files wait in the queue; more are refused with a message. */
export const QUEUE_CAP = 500;
const MAX_NETWORK_RETRIES = 5;

export const queue = store<QueueItem[]>([]);
const blobs = new Map<string, Blob>();
let running = false;
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

const update = (id: string, patch: Partial<QueueItem>) =>
  queue.set(queue.value.map((q) => (q.id === id ? { ...q, ...patch } : q)));

/** Restore unfinished uploads after a reload and continue with them. */
export async function restoreQueue(uploaded: () => void): Promise<void> {
  onUploaded = uploaded;
  const rows = (await tx<Stored[]>("readonly", (s) => s.getAll() as IDBRequest<Stored[]>)).sort(
    (a, b) => a.createdAt - b.createdAt,
  );
  const known = new Set(queue.value.map((q) => q.id));
  const restored: QueueItem[] = [];
  for (const r of rows) {
    if (known.has(r.id)) continue;
    blobs.set(r.id, r.file);
    restored.push({
      id: r.id,
      name: r.name,
      size: r.file.size,
      caption: r.caption,
      hashtags: r.hashtags,
      status: "queued",
      sent: 0,
    });
  }
  if (restored.length) queue.set([...queue.value, ...restored]);
  pump();
}

export async function enqueue(files: File[], caption: string, hashtags: string): Promise<void> {
  const pending = queue.value.filter((q) => q.status !== "done").length;
  if (pending + files.length > QUEUE_CAP) throw new Error(`At most ${QUEUE_CAP} files can wait at once.`);
  for (const file of files) {
    const id = crypto.randomUUID();
    const row: Stored = { id, file, name: file.name, caption, hashtags, createdAt: Date.now() };
    await tx("readwrite", (s) => s.put(row));
    blobs.set(id, file);
    queue.set([
      ...queue.value,
      { id, name: file.name, size: file.size, caption, hashtags, status: "queued", sent: 0 },
    ]);
  }
  pump();
}

export async function removeItem(id: string): Promise<void> {
  await tx("readwrite", (s) => s.delete(id));
  blobs.delete(id);
  queue.set(queue.value.filter((q) => q.id !== id));
}

export function retryItem(id: string): void {
  update(id, { status: "queued", error: undefined, sent: 0 });
  pump();
}

/** The event reopened: files that were refused while locked go again. */
export function resumeLocked(): void {
  let any = false;
  queue.set(
    queue.value.map((q) => {
      if (q.status !== "locked") return q;
      any = true;
      return { ...q, status: "queued" as const, sent: 0 };
    }),
  );
  if (any) pump();
}

export function clearDone(): void {
  queue.set(queue.value.filter((q) => q.status !== "done"));
}

interface XhrResult {
  status: number;
  body: Record<string, unknown>;
}

function send(item: QueueItem, blob: Blob): Promise<XhrResult> {
  return new Promise((resolve, reject) => {
    const form = new FormData();
    // Fields before the file: the server reads them while streaming.
    form.append("client_upload_id", item.id);
    if (item.caption) form.append("caption", item.caption);
    if (item.hashtags) form.append("hashtags", item.hashtags);
    form.append("file", blob, item.name);
    const xhr = new XMLHttpRequest();
    xhr.open("POST", `${API}/upload`);
    const token = session.token();
    if (token) xhr.setRequestHeader("authorization", `Bearer ${token}`);
    // The multipart body is a little larger than the file: count file bytes only.
    xhr.upload.onprogress = (e) => update(item.id, { sent: Math.min(e.loaded, item.size) });
    xhr.onload = () => {
      let body: Record<string, unknown> = {};
      try {
        body = JSON.parse(xhr.responseText) as Record<string, unknown>;
      } catch {
        // Non-JSON answers (a proxy error page) count as failures below.
      }
      resolve({ status: xhr.status, body });
    };
    xhr.onerror = () => reject(new Error("network"));
    xhr.onabort = () => reject(new Error("aborted"));
    xhr.send(form);
  });
}

async function uploadOne(item: QueueItem): Promise<void> {
  const blob = blobs.get(item.id);
  if (!blob) return removeItem(item.id);
  for (let attempt = 0; ; attempt++) {
    update(item.id, { status: "uploading", sent: 0 });
    try {
      const res = await send(item, blob);
      if (res.status === 200 || res.status === 201) {
        await tx("readwrite", (s) => s.delete(item.id));
        blobs.delete(item.id);
        update(item.id, { status: "done", sent: item.size });
        onUploaded?.();
        return;
      }
      const err = (res.body.error ?? {}) as { code?: string; message?: string };
      if (err.code === "uploads_locked") return update(item.id, { status: "locked", sent: 0 });
      if (res.status >= 500 || res.status === 429) throw new Error(err.message ?? `HTTP ${res.status}`);
      return update(item.id, { status: "failed", sent: 0, error: err.message ?? `HTTP ${res.status}` });
    } catch (e) {
      if (attempt + 1 >= MAX_NETWORK_RETRIES)
        return update(item.id, { status: "failed", error: (e as Error).message });
      await new Promise((r) => setTimeout(r, 1000 * 2 ** attempt));
    }
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
