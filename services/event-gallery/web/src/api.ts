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

export interface User {
  id: string;
  display_name: string;
  role: "guest" | "host" | "admin";
  is_banned: boolean;
}
export interface EventInfo {
  name: string;
  uploads_locked: boolean;
  released: boolean;
  keepsake_ready: boolean;
}
export interface Me {
  user: User;
  event: EventInfo;
  pin_reset_pending: boolean;
}
export interface Item {
  id: string;
  uploader: { id: string; display_name: string };
  caption: string;
  hashtags: string[];
  media_type: "image" | "video";
  created_at: string;
  like_count: number;
  comment_count: number;
  liked_by_me: boolean;
  compression_status: string;
  width: number | null;
  height: number | null;
  original_url: string | null;
  preview_url: string | null;
  display_url: string | null;
  thumbnail_url: string | null;
  /** Pre-moderation: "pending" only on the viewer's own uploads and in the host queue. */
  approval?: "approved" | "pending";
  mime_type?: string;
}
export interface Comment {
  id: string;
  upload_id: string;
  user: { id: string; display_name: string };
  text: string;
  created_at: string;
}
export interface FeedPage {
  items: Item[];
  next_cursor: string | null;
  delta_cursor: string;
}
export interface Delta {
  items: Item[];
  changes: Item[];
  removed_ids: string[];
  hidden_user_ids: string[];
  cursor: string;
  has_more: boolean;
}
export interface JobState {
  status: string;
  progress_pct: number;
  ready: boolean;
  message?: string;
}
export interface ExportStatus {
  released: boolean;
  epoch: number;
  zip: JobState;
  html: JobState;
}

/** Deliver a keepsake through a hidden same-origin frame (the export endpoints allow SAMEORIGIN). */
export async function downloadKeepsake(kind: "zip" | "html"): Promise<void> {
  const { ticket } = await api<{ ticket: string }>("POST", "/export/ticket", { kind });
  const frame = document.createElement("iframe");
  frame.style.display = "none";
  frame.src = `${API}/export/${kind}/download?ticket=${encodeURIComponent(ticket)}`;
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
