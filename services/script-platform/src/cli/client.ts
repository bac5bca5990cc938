import { CliError, EXIT } from "./errors.js";

export type Fetch = typeof fetch;

/** The subset of the admin API's shapes the CLI reads (the script-platform contract). */
export interface ScriptView {
  id: string;
  app_id: string;
  name: string;
  kind: "endpoint" | "module";
  source: string;
  description?: string | null;
  timeout_seconds?: number | null;
  sandbox?: Record<string, unknown> | null;
  language?: "javascript" | "typescript";
  version?: number;
}
export interface RouteView {
  id: string;
  script_id: string;
  host_kind: "any" | "strict" | "wildcard";
  host?: string | null;
  path: string;
  path_kind?: string;
  method: string;
  dispatch_mode: "sync" | "async";
}
/** A trigger's kind-specific detail and retry policy, as the API reports them and platform.json holds them. */
export interface TriggerDetail {
  retry?: { max_attempts: number; backoff_ms: number; max_backoff_ms: number };
  collection?: string;
  operations?: string[];
  topic?: string;
  schedule?: string;
  timezone?: string;
}
export interface TriggerView extends TriggerDetail {
  id: string;
  kind: string;
  script_id: string;
  enabled: boolean;
  has_inbound_secret?: boolean;
}
export interface AppView {
  id: string;
  slug: string;
  name: string;
}

/** The platform's URL, the admin token (null: none yet) and the fetch to call it with (tests inject one). */
export interface ApiClientDeps {
  baseUrl: string;
  token: string | null;
  fetch?: Fetch | undefined;
}

export type ApiClient = ReturnType<typeof createApiClient>;

/** A thin client of the public admin API: bearer auth, the contract's error shape turned into CliError. */
export function createApiClient(deps: ApiClientDeps) {
  const { baseUrl, token } = deps;
  const fetchImpl: Fetch = deps.fetch ?? fetch;

  function url(path: string): string {
    return `${baseUrl}${path}`;
  }

  function headers(extra: Record<string, string> = {}): Record<string, string> {
    return { ...(token ? { authorization: `Bearer ${token}` } : {}), ...extra };
  }

  async function request<T>(method: string, path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    let res: Response;
    try {
      res = await fetchImpl(url(path), {
        method,
        headers: headers(body === undefined ? {} : { "content-type": "application/json" }),
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      throw new CliError(`Cannot reach ${baseUrl}: ${causeOf(err)}`);
    }
    if (res.status === 204) return undefined as T;
    const text = await res.text();
    if (!res.ok) throw errorOf(res.status, text, baseUrl);
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CliError(`${baseUrl} answered ${method} ${path} with something other than JSON.`);
    }
  }

  function get<T>(path: string): Promise<T> {
    return request<T>("GET", path);
  }

  /** Every item of a `{items, next_cursor}` list. */
  async function all<T>(path: string): Promise<T[]> {
    const out: T[] = [];
    let cursor: string | null = null;
    const sep = path.includes("?") ? "&" : "?";
    do {
      const q: string = `${sep}limit=200${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`;
      const page: { items: T[]; next_cursor: string | null } = await get(`${path}${q}`);
      out.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor);
    return out;
  }

  function app(idOrSlug: string): Promise<AppView> {
    return get<AppView>(`/api/v1/admin/apps/${encodeURIComponent(idOrSlug)}`);
  }

  function scripts(appId: string): Promise<ScriptView[]> {
    return all<ScriptView>(`/api/v1/admin/scripts?app_id=${encodeURIComponent(appId)}`);
  }

  function routes(scriptId: string): Promise<RouteView[]> {
    return all<RouteView>(`/api/v1/admin/scripts/${scriptId}/routes`);
  }

  function triggers(appId: string): Promise<TriggerView[]> {
    return all<TriggerView>(`/api/v1/admin/apps/${appId}/triggers`);
  }

  return {
    baseUrl,
    url,
    headers,
    request,
    get,
    all,
    app,
    scripts,
    routes,
    triggers,
  };
}

/** The server's `{error: {code, message}}` as one line; 401 and 403 exit with the auth code. */
export function errorOf(status: number, text: string, baseUrl: string): CliError {
  let code = `http_${status}`;
  let message = text.slice(0, 200);
  let extra = "";
  try {
    const j = JSON.parse(text) as {
      error?: { code?: string; message?: string; field?: string; line?: number };
    };
    if (j.error?.code) code = j.error.code;
    if (j.error?.message) message = j.error.message;
    if (j.error?.field) extra += ` (field ${j.error.field})`;
    if (j.error?.line) extra += ` (line ${j.error.line})`;
  } catch {
    // not the contract's shape: keep the text
  }
  if (status === 401)
    return new CliError(
      `${baseUrl} did not accept the credentials (${code}): run \`platform login\` again or check PLATFORM_TOKEN.`,
      EXIT.auth,
    );
  return new CliError(`${status} ${code}: ${message}${extra}`, status === 403 ? EXIT.auth : EXIT.failed);
}

function causeOf(err: unknown): string {
  const e = err as { cause?: { code?: string; message?: string }; message?: string };
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}
