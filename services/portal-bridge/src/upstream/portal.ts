import type { Clock } from "@app/kit/clock";
import { readCapped } from "./read-capped.js";

/**
 * The only module that talks to the school portal. It can send GET requests and the one
 * session-extension POST; any other method or POST target is refused in code before any
 * network call (seed: the bridge is read-only toward the portal).
 */
export const REFRESH_SESSION_PATH = "/api/v3/authentication/refresh-session";
export const INACTIVITY_MESSAGE = "Session was expired due to inactivity";

export type PortalErrorKind =
  | "not_configured"
  | "no_token"
  | "session_expired"
  | "unauthorized"
  | "http"
  | "timeout"
  | "network"
  | "bad_response"
  | "too_large"
  | "forbidden_request";

const DESCRIPTIONS: Record<PortalErrorKind, string> = {
  not_configured: "The portal is not configured (PORTAL_BASE_URL is unset).",
  no_token: "No portal token is configured; paste one at /token.",
  session_expired:
    "The portal session expired due to inactivity; log in in a browser, copy the jwt cookie and paste it at /token.",
  unauthorized: "The portal rejected the token (401); paste a fresh token at /token.",
  http: "The portal answered with an error.",
  timeout: "The portal did not answer in time.",
  network: "The portal could not be reached.",
  bad_response: "The portal sent a response that is not valid JSON.",
  too_large:
    "The portal's answer is larger than the bridge reads (UPSTREAM_MAX_BYTES); ask for less, e.g. with a smaller limit.",
  forbidden_request: "The bridge refused to send this request (read-only toward the portal).",
};

export class PortalError extends Error {
  readonly kind: PortalErrorKind;
  /** Upstream HTTP status when there was one. */
  readonly status: number | null;
  /** The token the failed request carried (never logged; lets callers ignore stale failures). */
  readonly token: string | null;
  constructor(kind: PortalErrorKind, status: number | null = null, token: string | null = null, detail = "") {
    const base = DESCRIPTIONS[kind];
    super(
      status !== null && kind === "http" ? `${base.replace(/\.$/, "")} (HTTP ${status}).${detail}` : base,
    );
    this.name = "PortalError";
    this.kind = kind;
    this.status = status;
    this.token = token;
  }
  /** A 401 of either flavour: the token or its session is gone; retrying cannot help. */
  get isAuthFailure(): boolean {
    return this.kind === "session_expired" || this.kind === "unauthorized";
  }
  /** Worth retrying later: the portal was unreachable, slow or failing on its side. */
  get isTransient(): boolean {
    return (
      this.kind === "timeout" ||
      this.kind === "network" ||
      (this.kind === "http" && this.status !== null && (this.status >= 500 || this.status === 429))
    );
  }
}

export type FetchFn = typeof fetch;

export interface PortalClientOptions {
  /** Origin such as https://portal.example.org; undefined = not configured. */
  baseUrl: string | undefined;
  timeoutMs: number;
  clock: Clock;
  /** The current token (read at each request so a replacement applies to the very next one). */
  currentToken: () => string | null;
  fetch?: FetchFn;
  /** Cap on a JSON answer (UPSTREAM_MAX_BYTES); default MAX_JSON_BYTES. */
  maxBytes?: number;
  /** Told about every 401 (with the token that met it), so the keep-alive can stop at once. */
  onAuthFailure?: (token: string | null, err: PortalError) => void;
}

export interface StreamResponse {
  status: number;
  headers: Headers;
  body: ReadableStream<Uint8Array> | null;
  /** Call when done with the body (stops the header timeout if still armed). */
  done(): void;
}

type Query = Record<string, string | number | boolean | undefined>;

export type PortalClient = ReturnType<typeof createPortalClient>;

export function createPortalClient(deps: PortalClientOptions) {
  const baseUrl = deps.baseUrl?.replace(/\/+$/, "");
  const { timeoutMs, clock, currentToken, onAuthFailure } = deps;
  const fetchFn: FetchFn = deps.fetch ?? fetch;
  const maxBytes = deps.maxBytes ?? MAX_JSON_BYTES;

  const configured = baseUrl !== undefined;

  /** Authenticated GET of a JSON resource under /api/. */
  async function getJson<T = unknown>(
    path: string,
    query: Query = {},
    opts: { token?: string } = {},
  ): Promise<T> {
    return requestJson<T>("GET", path, query, opts.token, true);
  }

  /** Unauthenticated GET (e.g. /api/v3/config/public). */
  async function getPublicJson<T = unknown>(path: string): Promise<T> {
    return requestJson<T>("GET", path, {}, undefined, false);
  }

  /** The keep-alive's session extension; returns the idle budget left in seconds. */
  async function refreshSession(opts: { token?: string } = {}): Promise<number> {
    const body = await requestJson<{ expiresInSeconds?: unknown }>(
      "POST",
      REFRESH_SESSION_PATH,
      {},
      opts.token,
      true,
    );
    const n = body?.expiresInSeconds;
    if (typeof n !== "number" || !Number.isFinite(n)) throw new PortalError("bad_response");
    return n;
  }

  /**
   * Authenticated GET whose body is handed back as a stream (file mirror). The timeout covers
   * the wait for the response headers only, so a long download is not cut off.
   */
  async function getStream(path: string, headers: Record<string, string> = {}): Promise<StreamResponse> {
    const { res, done } = await send("GET", path, {}, undefined, true, headers, false);
    return { status: res.status, headers: res.headers, body: res.body, done };
  }

  async function requestJson<T>(
    method: "GET" | "POST",
    path: string,
    query: Query,
    token: string | undefined,
    auth: boolean,
  ): Promise<T> {
    const { res, done, used } = await send(method, path, query, token, auth, {}, true);
    try {
      const text = await readCapped(res, maxBytes, () => new PortalError("too_large", res.status, used));
      try {
        return (text === "" ? null : JSON.parse(text)) as T;
      } catch {
        throw new PortalError("bad_response", res.status, used);
      }
    } catch (err) {
      throw mapThrown(err, used);
    } finally {
      done();
    }
  }

  async function send(
    method: "GET" | "POST",
    path: string,
    query: Query,
    explicitToken: string | undefined,
    auth: boolean,
    extraHeaders: Record<string, string>,
    timeoutCoversBody: boolean,
  ): Promise<{ res: Response; done: () => void; used: string | null }> {
    assertAllowed(method, path);
    if (!baseUrl) throw new PortalError("not_configured");
    const token = auth ? (explicitToken ?? currentToken()) : null;
    if (auth && !token) throw new PortalError("no_token");
    const url = new URL(baseUrl + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    const ac = new AbortController();
    const timer = clock.setTimeout(() => ac.abort(new PortalError("timeout", null, token)), timeoutMs);
    const done = () => timer.cancel();
    let res: Response;
    try {
      res = await fetchFn(url, {
        method,
        headers: {
          accept: "application/json",
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...extraHeaders,
        },
        redirect: "manual",
        signal: ac.signal,
      });
    } catch (err) {
      done();
      throw mapThrown(err, token);
    }
    if (!timeoutCoversBody) done();
    if (res.status >= 200 && res.status < 300) return { res, done, used: token };
    // Error bodies are small; read one to tell the inactivity 401 from other 401s.
    let text = "";
    try {
      text = await res.text();
    } catch {
      // The status alone is enough to classify the failure.
    } finally {
      done();
    }
    if (res.status === 401) {
      const err = new PortalError(
        text.includes(INACTIVITY_MESSAGE) ? "session_expired" : "unauthorized",
        401,
        token,
      );
      onAuthFailure?.(token, err);
      throw err;
    }
    throw new PortalError("http", res.status, token);
  }

  function mapThrown(err: unknown, token: string | null): PortalError {
    if (err instanceof PortalError) return err;
    const e = err as { name?: string; cause?: unknown };
    if (e?.cause instanceof PortalError) return e.cause;
    if (e?.name === "AbortError" || e?.name === "TimeoutError")
      return new PortalError("timeout", null, token);
    return new PortalError("network", null, token);
  }

  return {
    configured,
    getJson,
    getPublicJson,
    refreshSession,
    getStream,
  };
}

/** JSON answers are read into memory; a bound keeps one odd answer from exhausting it. */
export const MAX_JSON_BYTES = 10 * 1024 * 1024;

/** Read-only guard: GET anything under /api/, or POST to the refresh-session route only. */
export function assertAllowed(method: string, path: string): void {
  const okPath = path.startsWith("/api/") && !/[?#\\]/.test(path) && !/(^|\/)\.\.?(\/|$)/.test(path);
  if (!okPath) throw new PortalError("forbidden_request");
  if (method === "GET") return;
  if (method === "POST" && path === REFRESH_SESSION_PATH) return;
  throw new PortalError("forbidden_request");
}
