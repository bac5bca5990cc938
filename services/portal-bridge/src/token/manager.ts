import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import { AppError, conflict, unavailable } from "@app/kit/errors";
import type { Logger } from "@app/kit/logger";
import { type PortalClient, PortalError } from "../upstream/portal.js";
import { cleanPaste, decodeClaims, MalformedTokenError, type TokenClaims } from "./jwt.js";
import type { TokenStore } from "./store.js";

export type TokenSource = "env" | "state" | "put";

export interface CurrentToken {
  token: string;
  claims: TokenClaims;
  source: TokenSource;
}

export interface TokenStatus {
  present: boolean;
  source: TokenSource | null;
  user_id: string | null;
  issued_at: string | null;
  expires_at: string | null;
  expires_in_s: number | null;
}

const tryDecode = (token: string | undefined): TokenClaims | null => {
  if (!token) return null;
  try {
    return decodeClaims(token);
  } catch {
    return null;
  }
};

export const isReadableToken = (token: string): boolean => tryDecode(token) !== null;

/**
 * Seed rule 5: of the saved token and PORTAL_JWT_COOKIE the one with the later exp wins, unless
 * they belong to different accounts, in which case the environment value wins. A value that
 * cannot be decoded does not compete.
 */
export function chooseStartupToken(
  envToken: string | undefined,
  savedToken: string | undefined,
): CurrentToken | null {
  const envClaims = tryDecode(envToken);
  const savedClaims = tryDecode(savedToken);
  if (envToken && envClaims && savedToken && savedClaims) {
    const sameAccount =
      envClaims.userId === savedClaims.userId && envClaims.accountId === savedClaims.accountId;
    if (sameAccount && savedClaims.exp > envClaims.exp)
      return { token: savedToken, claims: savedClaims, source: "state" };
    return { token: envToken, claims: envClaims, source: "env" };
  }
  if (envToken && envClaims) return { token: envToken, claims: envClaims, source: "env" };
  if (savedToken && savedClaims) return { token: savedToken, claims: savedClaims, source: "state" };
  return null;
}

interface MeResponse {
  user?: { id?: unknown };
}

/** The token in use at start (or null) and what checking, saving and logging a replacement needs. */
export interface TokenManagerDeps {
  initial: CurrentToken | null;
  clock: Clock;
  portal: () => PortalClient;
  store: TokenStore;
  logger: Logger;
}

export type TokenManager = ReturnType<typeof createTokenManager>;

/** Holds the upstream token; replacement follows PUT /api/token's rules (seed, "PUT /api/token"). */
export function createTokenManager(deps: TokenManagerDeps) {
  let current: CurrentToken | null = deps.initial;
  const listeners: ((t: CurrentToken) => void)[] = [];
  let queue: Promise<unknown> = Promise.resolve();

  function readToken(): string | null {
    return current?.token ?? null;
  }

  function readInfo(): CurrentToken | null {
    return current;
  }

  /** Called after a replacement has been accepted (the keep-alive restarts on it). */
  function onReplaced(fn: (t: CurrentToken) => void): void {
    listeners.push(fn);
  }

  function status(): TokenStatus {
    const c = current;
    if (!c)
      return {
        present: false,
        source: null,
        user_id: null,
        issued_at: null,
        expires_at: null,
        expires_in_s: null,
      };
    return {
      present: true,
      source: c.source,
      user_id: c.claims.userId,
      issued_at: c.claims.iat === null ? null : toIso(c.claims.iat),
      expires_at: toIso(c.claims.exp),
      expires_in_s: Math.max(0, Math.floor((c.claims.exp - deps.clock.now()) / 1000)),
    };
  }

  /** Replacements run one at a time, so two pastes cannot interleave their checks. */
  function replace(raw: string): Promise<CurrentToken> {
    const run = queue.then(
      () => replaceNow(raw),
      () => replaceNow(raw),
    );
    queue = run.catch(() => undefined);
    return run;
  }

  async function replaceNow(raw: string): Promise<CurrentToken> {
    const token = cleanPaste(raw);
    let claims: TokenClaims;
    try {
      claims = decodeClaims(token);
    } catch (err) {
      const why = err instanceof MalformedTokenError ? err.message : "The token is not a JWT.";
      throw new AppError(422, "malformed_token", `${why} Paste the value of the jwt cookie.`);
    }
    if (claims.exp <= deps.clock.now())
      throw new AppError(
        422,
        "expired_token",
        "The token has expired; log in in a browser and copy a fresh jwt cookie.",
      );
    let me: MeResponse;
    try {
      me = (await deps.portal().getJson<MeResponse>("/api/v3/me", {}, { token })) ?? {};
    } catch (err) {
      throw toReplaceError(err);
    }
    const userId = me.user?.id === undefined || me.user?.id === null ? null : String(me.user.id);
    if (userId === null)
      throw new AppError(502, "upstream_rejected", "The portal's /me answer carried no user id.");
    const expected = current?.claims.userId ?? null;
    if (expected !== null && userId !== expected)
      throw conflict(
        "different_account",
        "The token belongs to a different account; switching accounts needs a new PORTAL_JWT_COOKIE and a restart.",
      );
    await deps.store.save(token, deps.clock.iso());
    const next: CurrentToken = { token, claims, source: "put" };
    current = next;
    deps.logger.info(
      { expires_at: toIso(claims.exp), user_id: claims.userId },
      "upstream token replaced; saved to STATE_DIR",
    );
    for (const fn of listeners) fn(next);
    return next;
  }

  return {
    get token() {
      return readToken();
    },
    get info() {
      return readInfo();
    },
    onReplaced,
    status,
    replace,
  };
}

function toReplaceError(err: unknown): AppError {
  if (err instanceof PortalError) {
    if (err.isAuthFailure)
      return new AppError(
        502,
        "upstream_rejected",
        "The portal rejected this token (401); it may be logged out or expired. Copy a fresh jwt cookie.",
      );
    if (err.kind === "not_configured")
      return new AppError(
        503,
        "upstream_unavailable",
        err.message,
        { retry_after_s: 60 },
        { "retry-after": "60" },
      );
    if (err.isTransient) {
      const e = unavailable(
        30,
        `The portal could not check the token: ${err.message}`,
        "upstream_unavailable",
      );
      return e;
    }
    return new AppError(502, "upstream_rejected", `The portal refused the check: ${err.message}`);
  }
  return new AppError(502, "upstream_rejected", "The portal's answer could not be checked.");
}
