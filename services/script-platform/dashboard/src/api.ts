/**
 * Admin API client. The session lives in the HttpOnly `platform_session` cookie set by login; the
 * token from the login body is also kept in sessionStorage and sent as a bearer credential, so the
 * dashboard keeps working where the cookie is not sent (for example a proxy that strips it).
 */

import { t } from "./i18n.js";

const TOKEN_KEY = "platform_admin_token";
export const API = "/api/v1/admin";

export interface ErrorBody {
  code: string;
  message: string;
  line?: number;
  column?: number;
  field?: string;
  [key: string]: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  readonly body: ErrorBody;
  constructor(status: number, body: ErrorBody) {
    super(body.message);
    this.status = status;
    this.body = body;
  }
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

type Listener = () => void;
const unauthorizedListeners = new Set<Listener>();

/** Called when any request answers 401: the session expired or was revoked. */
export function onUnauthorized(fn: Listener): () => void {
  unauthorizedListeners.add(fn);
  return () => unauthorizedListeners.delete(fn);
}

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

function storeToken(token: string | null): void {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage can be disabled (private mode); the cookie still carries the session.
  }
}

async function toError(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // Not JSON (a proxy error page, an empty body): fall through to a generic message.
  }
  const err = (body as { error?: ErrorBody } | null)?.error;
  if (err && typeof err.message === "string") return new ApiError(res.status, err);
  return new ApiError(res.status, {
    code: "http_error",
    message: `The server answered ${res.status} ${res.statusText}.`.replace(" .", "."),
  });
}

export async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  const token = storedToken();
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(path.startsWith("/") ? path : `${API}/${path}`, {
      method,
      headers,
      credentials: "same-origin",
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, { code: "network_error", message: t("network_error") });
  }
  if (!res.ok) {
    const err = await toError(res);
    if (res.status === 401 && !path.endsWith("/login")) {
      storeToken(null);
      for (const fn of unauthorizedListeners) fn();
    }
    throw err;
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const api = {
  get: <T>(path: string) => request<T>("GET", path),
  post: <T>(path: string, body?: unknown) => request<T>("POST", path, body ?? {}),
  put: <T>(path: string, body: unknown) => request<T>("PUT", path, body),
  patch: <T>(path: string, body: unknown) => request<T>("PATCH", path, body),
  del: (path: string) => request<void>("DELETE", path),
};

export function qs(params: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params))
    if (v !== null && v !== undefined && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : "";
}

import type { LoginResult, Script } from "../../src/http/schemas.js";

export type { LoginResult };

/** Every script of an app (for names and pickers); the page cap guards against a list that never ends. */
export async function allScripts(appId: string): Promise<Script[]> {
  const out: Script[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 20; page++) {
    const r: Page<Script> = await api.get(`scripts${qs({ app_id: appId, cursor })}`);
    out.push(...r.items);
    cursor = r.next_cursor;
    if (!cursor) break;
  }
  return out;
}

export async function login(username: string, password: string): Promise<LoginResult> {
  const result = await request<LoginResult>("POST", `${API}/login`, { username, password });
  storeToken(result.token);
  return result;
}

export async function logout(): Promise<void> {
  try {
    await request<void>("POST", `${API}/logout`, {});
  } finally {
    storeToken(null);
  }
}

// Resource shapes come from the server's zod schemas (types only: nothing of zod or the server
// reaches the bundle).
export type {
  Admin,
  App,
  DeadLetter,
  Domain,
  Execution,
  LogLine,
  MatchResult,
  Route,
  Script,
  ScriptKind,
  Secret,
  Topic,
  Trigger,
} from "../../src/http/schemas.js";
