/**
 * Admin API client. The session lives in the HttpOnly `platform_session` cookie set by login; the
 * token from the login body is also kept in sessionStorage and sent as a bearer credential, so the
 * dashboard keeps working where the cookie is not sent (for example a proxy that strips it).
 */

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
    throw new ApiError(0, { code: "network_error", message: "The server could not be reached." });
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

export interface LoginResult {
  token: string;
  expires_at: string;
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

// Resource shapes as the Admin API returns them (fields the dashboard reads).
export interface Admin {
  id: string;
  username: string;
}
export interface App {
  id: string;
  slug: string;
  name: string;
  description?: string | null;
  created_at?: string;
}
export interface Domain {
  id: string;
  host: string;
  created_at?: string;
}
export type ScriptKind = "endpoint" | "module";
export interface Script {
  id: string;
  app_id: string;
  name: string;
  kind: ScriptKind;
  source: string;
  description?: string | null;
  timeout_seconds?: number | null;
  sandbox?: Record<string, number> | null;
  updated_at?: string;
  language?: "javascript" | "typescript";
  version?: number;
}
export interface Route {
  id: string;
  script_id: string;
  host_kind: "any" | "strict" | "wildcard";
  host?: string | null;
  path: string;
  path_kind?: string;
  method: string;
  dispatch_mode: "sync" | "async";
}
export type MatchResult =
  | { matched: true; app_id: string; route: Route; params: Record<string, string>; rest: string }
  | { matched: false };
export interface Trigger {
  id: string;
  app_id: string;
  kind: string;
  script_id: string;
  enabled: boolean;
  created_at?: string;
  [detail: string]: unknown;
}
export interface LogLine {
  level?: string;
  message?: string;
  msg?: string;
  args?: unknown[];
  at?: string;
  ts?: string;
}
export interface Execution {
  id: string;
  script_id?: string;
  script_name?: string;
  status: string;
  invocation_type?: string;
  started_at?: string;
  created_at?: string;
  duration_ms?: number | null;
  error?: unknown;
  logs?: LogLine[];
}
export interface DeadLetter {
  id: string;
  script_id?: string;
  source_kind?: string;
  error?: unknown;
  attempts?: number;
  created_at?: string;
  resolution?: string | null;
  resolved_at?: string | null;
  execution_id?: string | null;
  event?: unknown;
}
export interface Secret {
  name: string;
  updated_at: string;
}
export interface Topic {
  name: string;
  external: boolean;
  created_at?: string;
}
