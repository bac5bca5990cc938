import { API, api } from "./api.js";
import { store } from "./store.js";

/**
 * The real-time stream: a short-lived ticket is exchanged for an EventSource on /stream. A dropped
 * stream reconnects with backoff and tells listeners ("reconnected") so they catch up by delta.
 */

export const EVENTS = [
  "new-upload",
  "upload-processed",
  "upload-updated",
  "upload-removed",
  "like",
  "comment-added",
  "comment-removed",
  "user-hidden",
  "user-unhidden",
  "event-closed",
  "event-opened",
  "export-invalidated",
  "export-ready",
  "pin-reset-requested",
  "pin-reset",
  // Pre-moderation: hosts only (issue 14).
  "upload-pending",
  // Guestbook (issue 27); pending entries reach hosts only.
  "guestbook-entry",
  "guestbook-removed",
] as const;

type Listener = (event: string, data: Record<string, unknown>) => void;

export const connected = store(false);
const listeners = new Set<Listener>();
let source: EventSource | null = null;
let retryMs = 1000;
let timer: ReturnType<typeof setTimeout> | null = null;
let wanted = false;
let everConnected = false;

export function onLive(fn: Listener): () => void {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

const emit = (event: string, data: Record<string, unknown>) => {
  for (const fn of listeners) fn(event, data);
};

let opening = false;

async function open(): Promise<void> {
  if (!wanted || opening || source) return;
  opening = true;
  try {
    const { ticket } = await api<{ ticket: string }>("POST", "/stream/ticket");
    if (!wanted) return;
    const es = new EventSource(`${API}/stream?ticket=${encodeURIComponent(ticket)}`);
    source = es;
    es.onopen = () => {
      retryMs = 1000;
      connected.set(true);
      if (everConnected) emit("reconnected", {});
      everConnected = true;
    };
    es.onerror = () => {
      es.close();
      if (source === es) source = null;
      connected.set(false);
      schedule();
    };
    for (const name of EVENTS)
      es.addEventListener(name, (e) => {
        let data: Record<string, unknown> = {};
        try {
          data = JSON.parse((e as MessageEvent).data) as Record<string, unknown>;
        } catch {
          // An event without JSON data still tells us something changed.
        }
        emit(name, data);
      });
  } catch {
    schedule();
  } finally {
    opening = false;
  }
}

function schedule(): void {
  if (!wanted || timer) return;
  timer = setTimeout(() => {
    timer = null;
    open();
  }, retryMs);
  retryMs = Math.min(retryMs * 2, 30_000);
}

/**
 * The browser knows the network went away before the stream notices (a stalled TCP connection
 * can look open for minutes): drop the stream at once, and reconnect at once when it is back
 * instead of waiting out the backoff.
 */
function wentOffline(): void {
  source?.close();
  source = null;
  connected.set(false);
}

function cameOnline(): void {
  if (!wanted) return;
  retryMs = 1000;
  if (timer) clearTimeout(timer);
  timer = null;
  if (!source) open();
}

export function startLive(): void {
  if (wanted) return;
  wanted = true;
  addEventListener("offline", wentOffline);
  addEventListener("online", cameOnline);
  open();
}

export function stopLive(): void {
  wanted = false;
  removeEventListener("offline", wentOffline);
  removeEventListener("online", cameOnline);
  source?.close();
  source = null;
  if (timer) clearTimeout(timer);
  timer = null;
  connected.set(false);
}
