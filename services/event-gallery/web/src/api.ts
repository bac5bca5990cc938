/** HTTP client of the gallery API: bearer session, JSON in and out, errors as ApiError. */

export const API = "/api/v1";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

const GUEST_KEY = "gallery.token";
const ADMIN_KEY = "gallery.admin";

/** Guests keep their session across visits; the admin token lives only as long as the tab. */
export const session = {
  token(): string | null {
    return sessionStorage.getItem(ADMIN_KEY) ?? localStorage.getItem(GUEST_KEY);
  },
  setGuest(token: string) {
    localStorage.setItem(GUEST_KEY, token);
  },
  setAdmin(token: string) {
    sessionStorage.setItem(ADMIN_KEY, token);
  },
  clear() {
    sessionStorage.removeItem(ADMIN_KEY);
    localStorage.removeItem(GUEST_KEY);
  },
};

export async function api<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = {};
  const token = session.token();
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(API + path, {
    method,
    headers,
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  if (res.status === 204) return undefined as T;
  const data = (await res.json().catch(() => ({}))) as Record<string, unknown>;
  if (!res.ok) {
    const err = (data.error ?? {}) as Record<string, unknown>;
    throw new ApiError(res.status, String(err.code ?? "error"), String(err.message ?? res.statusText), err);
  }
  return data as T;
}

// Request and response shapes come from the server's zod schemas (types only: nothing of zod
// or the server reaches the bundle).
export type {
  Comment,
  Delta,
  EventInfo,
  ExportStatus,
  FailedUpload,
  FeedPage,
  GuestbookEntry,
  GuestbookPage,
  Item,
  JobState,
  Me,
  User,
} from "../../src/http/schemas.js";

/**
 * Deliver a keepsake through a hidden same-origin frame (the export endpoints allow SAMEORIGIN).
 * `lang` is the guest's UI language: the Memories viewer opens in it.
 */
export async function downloadKeepsake(kind: "zip" | "html", lang: "en" | "de"): Promise<void> {
  const { ticket } = await api<{ ticket: string }>("POST", "/export/ticket", { kind });
  const frame = document.createElement("iframe");
  frame.style.display = "none";
  frame.src = `${API}/export/${kind}/download?ticket=${encodeURIComponent(ticket)}&lang=${lang}`;
  document.body.appendChild(frame);
  setTimeout(() => frame.remove(), 120_000);
}

export const formatBytes = (n: number): string => {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
};
