import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import { newId } from "@app/kit/ids";
import type { Logger } from "@app/kit/logger";
import {
  AccessDeniedError,
  InvalidClientError,
  InvalidClientMetadataError,
  InvalidGrantError,
  InvalidRequestError,
  InvalidTargetError,
  OAuthError,
  TooManyRequestsError,
  UnsupportedGrantTypeError,
  UnsupportedResponseTypeError,
} from "@modelcontextprotocol/sdk/server/auth/errors.js";
import { OAuthClientMetadataSchema } from "@modelcontextprotocol/sdk/shared/auth.js";
import { createFailureWindow } from "./rate-limit.js";
import type { ClientRecord, GrantRecord, OAuthState, OAuthStateFile } from "./state.js";

/**
 * The bridge as its own OAuth 2.1 authorization server (issue 16): dynamic client registration
 * (RFC 7591), authorization code with PKCE S256 only, refresh tokens rotated on every use with
 * reuse detection, revocation (RFC 7009). The owner approves each client once by typing
 * MCP_AUTH_TOKEN on the consent page. Everything here is testable without HTTP.
 */
export const SCOPE = "mcp";
export const ACCESS_TTL_S = 3600;
export const REFRESH_TTL_S = 30 * 24 * 3600;
export const CODE_TTL_S = 60;
/** Registrations never approved within this window are pruned first when the cap is reached. */
const UNAPPROVED_PRUNE_MS = 3600_000;
const REGISTRATIONS_PER_HOUR = 10;
const CONSENT_FAILURES = 5;
const CONSENT_WINDOW_MS = 15 * 60_000;
const LAST_USED_PERSIST_MS = 5 * 60_000;

export interface OAuthServerOptions {
  /** MCP_PUBLIC_URL as an origin, e.g. https://bridge.example.org (issuer). */
  issuer: string;
  maxClients: number;
  clock: Clock;
  logger: Logger;
  stateFile: OAuthStateFile;
  /** Constant-time check of the owner's secret (MCP_AUTH_TOKEN). */
  checkOwnerSecret: (value: string) => boolean;
}

export interface AuthorizeParams {
  client: ClientRecord;
  redirectUri: string;
  /** Whether the request named redirect_uri itself (then the token request must repeat it). */
  redirectUriGiven: boolean;
  codeChallenge: string;
  state: string | undefined;
  scope: string;
  resource: string;
}

/** An authorization request that must not redirect (unknown client, unregistered redirect URI). */
export class AuthorizePageError extends Error {
  constructor(
    readonly status: number,
    readonly reason: "unknown_client" | "bad_redirect_uri",
  ) {
    super(reason);
  }
}

/** An authorization request error that is reported to the client by redirect (RFC 6749 4.1.2.1). */
export class AuthorizeRedirectError extends Error {
  constructor(
    readonly redirectTo: string,
    readonly oauth: OAuthError,
  ) {
    super(oauth.message);
  }
}

export interface TokenResponse {
  access_token: string;
  token_type: "Bearer";
  expires_in: number;
  refresh_token: string;
  scope: string;
}

export interface ClientCredentials {
  clientId: string | undefined;
  clientSecret: string | undefined;
  /** How the client presented itself; decides the WWW-Authenticate of an invalid_client 401. */
  via: "basic" | "post" | "none";
}

interface CodeRecord {
  client_id: string;
  redirect_uri: string;
  redirect_uri_given: boolean;
  code_challenge: string;
  scope: string;
  resource: string;
  expires_at: number;
  /** Set once exchanged: a second exchange revokes the grant it produced (RFC 6749 4.1.2). */
  grant_id: string | null;
}

export interface ConnectedClient {
  client_id: string;
  client_name: string | null;
  redirect_uris: string[];
  created_at: string;
  last_used_at: string | null;
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");
const opaque = () => randomBytes(32).toString("base64url");
const sameHash = (a: string, b: string) =>
  a.length === b.length && timingSafeEqual(Buffer.from(a, "hex"), Buffer.from(b, "hex"));

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

/** https anywhere, or http on a loopback host for local clients; no fragment (RFC 6749 3.1.2). */
export function redirectUriAllowed(uri: string): boolean {
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return false;
  }
  if (u.hash !== "" || uri.includes("#")) return false;
  if (u.username || u.password) return false;
  if (u.protocol === "https:") return true;
  return u.protocol === "http:" && LOOPBACK.has(u.hostname);
}

export type OAuthServer = Awaited<ReturnType<typeof openOAuthServer>>;

export async function openOAuthServer(deps: OAuthServerOptions) {
  const oauthState: OAuthState = await deps.stateFile.load();
  const codes = new Map<string, CodeRecord>();
  /** access-token hash → grant id, rebuilt from the state at start. */
  const accessIndex = new Map<string, { grantId: string; expiresAt: number }>();
  const registrations = createFailureWindow({
    clock: deps.clock,
    limit: REGISTRATIONS_PER_HOUR,
    windowMs: 3600_000,
  });
  const consentFailures = createFailureWindow({
    clock: deps.clock,
    limit: CONSENT_FAILURES,
    windowMs: CONSENT_WINDOW_MS,
  });
  let lastUsePersisted = 0;
  const mcpResource = `${deps.issuer}/mcp`;
  prune();

  // ---- metadata ---------------------------------------------------------------------------

  /** RFC 8414 authorization-server metadata. */
  function authorizationServerMetadata() {
    const o = deps.issuer;
    return {
      issuer: o,
      authorization_endpoint: `${o}/oauth/authorize`,
      token_endpoint: `${o}/oauth/token`,
      registration_endpoint: `${o}/oauth/register`,
      revocation_endpoint: `${o}/oauth/revoke`,
      scopes_supported: [SCOPE],
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      grant_types_supported: ["authorization_code", "refresh_token"],
      code_challenge_methods_supported: ["S256"],
      token_endpoint_auth_methods_supported: ["none", "client_secret_post", "client_secret_basic"],
      revocation_endpoint_auth_methods_supported: ["none", "client_secret_post", "client_secret_basic"],
      authorization_response_iss_parameter_supported: true,
    };
  }

  /** RFC 9728 protected-resource metadata for /mcp. */
  function protectedResourceMetadata() {
    return {
      resource: mcpResource,
      authorization_servers: [deps.issuer],
      scopes_supported: [SCOPE],
      bearer_methods_supported: ["header"],
      resource_name: "portal-bridge",
    };
  }

  // ---- registration (RFC 7591) --------------------------------------------------------------

  async function register(body: unknown, ip: string) {
    if (!registrations.allowed(ip))
      throw new TooManyRequestsError("Too many client registrations from this address; try again later.");
    const parsed = OAuthClientMetadataSchema.safeParse(body ?? {});
    if (!parsed.success) throw new InvalidClientMetadataError("The client metadata is not valid.");
    const meta = parsed.data;
    if (meta.redirect_uris.length === 0)
      throw new InvalidClientMetadataError("redirect_uris must name at least one URI.");
    for (const uri of meta.redirect_uris)
      if (!redirectUriAllowed(String(uri)))
        throw new OAuthRedirectUriError(
          "Each redirect URI must be https, or http on a loopback host (localhost, 127.0.0.1, [::1]), without a fragment.",
        );
    const method = meta.token_endpoint_auth_method ?? "client_secret_basic";
    if (method !== "none" && method !== "client_secret_post" && method !== "client_secret_basic")
      throw new InvalidClientMetadataError(
        "token_endpoint_auth_method must be none, client_secret_post or client_secret_basic.",
      );
    for (const g of meta.grant_types ?? ["authorization_code"])
      if (g !== "authorization_code" && g !== "refresh_token")
        throw new InvalidClientMetadataError(
          "Only the authorization_code and refresh_token grants are supported.",
        );
    for (const r of meta.response_types ?? ["code"])
      if (r !== "code") throw new InvalidClientMetadataError("Only the code response type is supported.");
    registrations.fail(ip);

    pruneUnapprovedAtCap();
    if (oauthState.clients.length >= deps.maxClients)
      throw new AccessDeniedError(
        `This bridge already has ${deps.maxClients} registered clients; the owner can remove one on the /token page.`,
      );

    const now = deps.clock.now();
    const secret = method === "none" ? null : opaque();
    const client: ClientRecord = {
      client_id: newId(),
      secret_hash: secret ? sha256(secret) : null,
      client_name: meta.client_name?.slice(0, 200) ?? null,
      redirect_uris: meta.redirect_uris.map(String),
      token_endpoint_auth_method: method,
      client_id_issued_at: Math.floor(now / 1000),
      created_at: toIso(now),
      last_used_at: null,
      approved_at: null,
    };
    oauthState.clients.push(client);
    await persist();
    deps.logger.info({ client_id: client.client_id }, "OAuth client registered");
    return {
      client_id: client.client_id,
      ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      client_id_issued_at: client.client_id_issued_at,
      client_name: client.client_name ?? undefined,
      redirect_uris: client.redirect_uris,
      token_endpoint_auth_method: method,
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      scope: SCOPE,
    };
  }

  // ---- authorization -------------------------------------------------------------------------

  /**
   * Check an authorization request. Errors about the client or the redirect URI are shown on the
   * page (never redirected: that would make the bridge an open redirector); the rest go back to
   * the client's redirect URI.
   */
  function checkAuthorize(q: Record<string, string | undefined>): AuthorizeParams {
    const client = q.client_id ? clientById(q.client_id) : undefined;
    if (!client) throw new AuthorizePageError(400, "unknown_client");
    let redirectUri: string;
    if (q.redirect_uri !== undefined) {
      if (!client.redirect_uris.includes(q.redirect_uri))
        throw new AuthorizePageError(400, "bad_redirect_uri");
      redirectUri = q.redirect_uri;
    } else if (client.redirect_uris.length === 1) redirectUri = client.redirect_uris[0] as string;
    else throw new AuthorizePageError(400, "bad_redirect_uri");

    const fail = (err: OAuthError) =>
      new AuthorizeRedirectError(errorRedirect(redirectUri, err, q.state), err);
    if (q.response_type !== "code")
      throw fail(new UnsupportedResponseTypeError("Only response_type=code is supported."));
    if (!q.code_challenge || !/^[A-Za-z0-9_-]{43,128}$/.test(q.code_challenge))
      throw fail(new InvalidRequestError("A PKCE code_challenge (S256) is required."));
    if (q.code_challenge_method !== "S256")
      throw fail(new InvalidRequestError("code_challenge_method must be S256."));
    if (q.resource !== undefined && !resourceAllowed(q.resource))
      throw fail(new InvalidTargetError("The resource is not this bridge's MCP endpoint."));
    return {
      client,
      redirectUri,
      redirectUriGiven: q.redirect_uri !== undefined,
      codeChallenge: q.code_challenge,
      state: q.state,
      // Unknown scopes are ignored (RFC 6749 3.3): the only thing a token opens is /mcp.
      scope: SCOPE,
      resource: mcpResource,
    };
  }

  /** The owner's failed consent attempts are limited per address; true while more are allowed. */
  function consentAllowed(ip: string): boolean {
    return consentFailures.allowed(ip);
  }

  function consentRetryAfterS(ip: string): number {
    return consentFailures.retryAfterS(ip);
  }

  /**
   * The owner's answer on the consent page. Returns where to send the browser, or null when the
   * secret was wrong (the page is shown again).
   */
  async function decide(
    params: AuthorizeParams,
    approve: boolean,
    ownerSecret: string,
    ip: string,
  ): Promise<string | null> {
    if (!approve)
      return errorRedirect(
        params.redirectUri,
        new AccessDeniedError("The owner denied access."),
        params.state,
      );
    if (!deps.checkOwnerSecret(ownerSecret)) {
      consentFailures.fail(ip);
      deps.logger.warn("OAuth consent refused: wrong secret");
      return null;
    }
    const now = deps.clock.now();
    const code = opaque();
    sweepCodes(now);
    codes.set(sha256(code), {
      client_id: params.client.client_id,
      redirect_uri: params.redirectUri,
      redirect_uri_given: params.redirectUriGiven,
      code_challenge: params.codeChallenge,
      scope: params.scope,
      resource: params.resource,
      expires_at: now + CODE_TTL_S * 1000,
      grant_id: null,
    });
    if (params.client.approved_at === null) {
      params.client.approved_at = toIso(now);
      await persist();
    }
    deps.logger.info({ client_id: params.client.client_id }, "OAuth client approved by the owner");
    const u = new URL(params.redirectUri);
    u.searchParams.set("code", code);
    if (params.state !== undefined) u.searchParams.set("state", params.state);
    u.searchParams.set("iss", deps.issuer);
    return u.toString();
  }

  // ---- token endpoint -------------------------------------------------------------------------

  /** Client authentication at the token and revocation endpoints (RFC 6749 2.3). */
  function authenticateClient(creds: ClientCredentials): ClientRecord {
    const client = creds.clientId ? clientById(creds.clientId) : undefined;
    if (!client) throw new InvalidClientError("Unknown client.");
    if (client.secret_hash === null) {
      if (creds.clientSecret !== undefined) throw new InvalidClientError("This client has no secret.");
      return client;
    }
    if (creds.clientSecret === undefined || !sameHash(sha256(creds.clientSecret), client.secret_hash))
      throw new InvalidClientError("Client authentication failed.");
    return client;
  }

  async function token(
    client: ClientRecord,
    body: Record<string, string | undefined>,
  ): Promise<TokenResponse> {
    switch (body.grant_type) {
      case "authorization_code":
        return exchangeCode(client, body);
      case "refresh_token":
        return refresh(client, body);
      case undefined:
        throw new InvalidRequestError("grant_type is required.");
      default:
        throw new UnsupportedGrantTypeError("Only authorization_code and refresh_token are supported.");
    }
  }

  async function exchangeCode(client: ClientRecord, body: Record<string, string | undefined>) {
    if (!body.code || !body.code_verifier)
      throw new InvalidRequestError("code and code_verifier are required.");
    const now = deps.clock.now();
    const key = sha256(body.code);
    const rec = codes.get(key);
    if (!rec || rec.expires_at <= now || rec.client_id !== client.client_id) {
      if (rec && rec.expires_at <= now) codes.delete(key);
      throw new InvalidGrantError("The authorization code is invalid or expired.");
    }
    if (rec.grant_id !== null) {
      // A replayed code: whoever holds it may be an attacker; end what the first exchange issued.
      dropGrant(rec.grant_id);
      await persist();
      deps.logger.warn({ client_id: client.client_id }, "OAuth code reused; its tokens were revoked");
      throw new InvalidGrantError("The authorization code was already used.");
    }
    if (body.redirect_uri !== undefined ? body.redirect_uri !== rec.redirect_uri : rec.redirect_uri_given)
      throw new InvalidGrantError("redirect_uri does not match the authorization request.");
    if (body.resource !== undefined && !resourceAllowed(body.resource))
      throw new InvalidTargetError("The resource is not this bridge's MCP endpoint.");
    const challenge = createHash("sha256").update(body.code_verifier).digest("base64url");
    if (!/^[A-Za-z0-9._~-]{43,128}$/.test(body.code_verifier) || challenge !== rec.code_challenge)
      throw new InvalidGrantError("code_verifier does not match the code challenge.");

    const refresh = opaque();
    const grant: GrantRecord = {
      id: newId(),
      client_id: client.client_id,
      scope: rec.scope,
      resource: rec.resource,
      created_at: toIso(now),
      refresh_hash: sha256(refresh),
      refresh_expires_at: now + REFRESH_TTL_S * 1000,
      spent_refresh_hashes: [],
      access: [],
    };
    rec.grant_id = grant.id;
    oauthState.grants.push(grant);
    const access = issueAccess(grant, now);
    client.last_used_at = toIso(now);
    await persist();
    return tokenResponse(access, refresh, grant.scope);
  }

  async function refresh(client: ClientRecord, body: Record<string, string | undefined>) {
    if (!body.refresh_token) throw new InvalidRequestError("refresh_token is required.");
    const now = deps.clock.now();
    const hash = sha256(body.refresh_token);
    const grant = oauthState.grants.find((g) => g.refresh_hash === hash);
    if (!grant) {
      const spent = oauthState.grants.find((g) => g.spent_refresh_hashes.includes(hash));
      if (spent) {
        // Rotation means a refresh token works once; a second use means it leaked.
        dropGrant(spent.id);
        await persist();
        deps.logger.warn({ client_id: spent.client_id }, "OAuth refresh token reused; the grant was revoked");
      }
      throw new InvalidGrantError("The refresh token is invalid, expired or revoked.");
    }
    if (grant.client_id !== client.client_id || grant.refresh_expires_at <= now)
      throw new InvalidGrantError("The refresh token is invalid, expired or revoked.");
    if (body.resource !== undefined && !resourceAllowed(body.resource))
      throw new InvalidTargetError("The resource is not this bridge's MCP endpoint.");
    const refresh = opaque();
    grant.spent_refresh_hashes = [grant.refresh_hash, ...grant.spent_refresh_hashes].slice(0, 20);
    grant.refresh_hash = sha256(refresh);
    grant.refresh_expires_at = now + REFRESH_TTL_S * 1000;
    const access = issueAccess(grant, now);
    client.last_used_at = toIso(now);
    await persist();
    return tokenResponse(access, refresh, grant.scope);
  }

  function issueAccess(grant: GrantRecord, now: number): string {
    const token = opaque();
    const rec = { hash: sha256(token), expires_at: now + ACCESS_TTL_S * 1000 };
    grant.access = [...grant.access.filter((a) => a.expires_at > now), rec];
    accessIndex.set(rec.hash, { grantId: grant.id, expiresAt: rec.expires_at });
    return token;
  }

  function tokenResponse(access: string, refresh: string, scope: string): TokenResponse {
    return {
      access_token: access,
      token_type: "Bearer",
      expires_in: ACCESS_TTL_S,
      refresh_token: refresh,
      scope,
    };
  }

  // ---- revocation (RFC 7009) ------------------------------------------------------------------

  /** Unknown or foreign tokens are no error (RFC 7009 2.2): the answer is the same either way. */
  async function revoke(client: ClientRecord, token: string | undefined): Promise<void> {
    if (!token) throw new InvalidRequestError("token is required.");
    const hash = sha256(token);
    const viaAccess = accessIndex.get(hash);
    const grant = viaAccess
      ? oauthState.grants.find((g) => g.id === viaAccess.grantId)
      : oauthState.grants.find((g) => g.refresh_hash === hash || g.spent_refresh_hashes.includes(hash));
    if (!grant || grant.client_id !== client.client_id) return;
    if (viaAccess) {
      grant.access = grant.access.filter((a) => a.hash !== hash);
      accessIndex.delete(hash);
    } else dropGrant(grant.id);
    await persist();
  }

  // ---- the resource server side -----------------------------------------------------------------

  /** An access token for /mcp: the client it belongs to, or null (unknown, expired, revoked). */
  function verifyAccessToken(token: string): { clientId: string } | null {
    const now = deps.clock.now();
    const hit = accessIndex.get(sha256(token));
    if (!hit) return null;
    if (hit.expiresAt <= now) return null;
    const grant = oauthState.grants.find((g) => g.id === hit.grantId);
    const client = grant ? clientById(grant.client_id) : undefined;
    if (!grant || !client) return null;
    client.last_used_at = toIso(now);
    // last_used_at is for the owner's list, not security: persist it now and then, not per call.
    if (now - lastUsePersisted > LAST_USED_PERSIST_MS) {
      lastUsePersisted = now;
      void persist().catch((err) =>
        deps.logger.warn({ code: (err as NodeJS.ErrnoException).code }, "could not save OAuth state"),
      );
    }
    return { clientId: client.client_id };
  }

  // ---- the owner's view -----------------------------------------------------------------------

  /** Clients the owner has approved (a registration nobody approved connects nothing). */
  function listClients(): ConnectedClient[] {
    return oauthState.clients
      .filter((c) => c.approved_at !== null)
      .map((c) => ({
        client_id: c.client_id,
        client_name: c.client_name,
        redirect_uris: c.redirect_uris,
        created_at: c.created_at,
        last_used_at: c.last_used_at,
      }));
  }

  /** Remove a client and every token it holds. False when there is no such client. */
  async function deleteClient(clientId: string): Promise<boolean> {
    if (!clientById(clientId)) return false;
    for (const g of oauthState.grants.filter((x) => x.client_id === clientId)) dropGrant(g.id);
    oauthState.clients = oauthState.clients.filter((c) => c.client_id !== clientId);
    for (const [k, c] of codes) if (c.client_id === clientId) codes.delete(k);
    await persist();
    deps.logger.info({ client_id: clientId }, "OAuth client removed by the owner");
    return true;
  }

  function clientById(clientId: string): ClientRecord | undefined {
    return oauthState.clients.find((c) => c.client_id === clientId);
  }

  /** Persist what is pending (last-used times); called on shutdown. */
  async function flush(): Promise<void> {
    await persist();
  }

  // ---- internals --------------------------------------------------------------------------------

  function resourceAllowed(resource: string): boolean {
    const r = resource.replace(/\/+$/, "");
    return r === mcpResource || r === deps.issuer;
  }

  function errorRedirect(redirectUri: string, err: OAuthError, state: string | undefined): string {
    const u = new URL(redirectUri);
    u.searchParams.set("error", err.errorCode);
    u.searchParams.set("error_description", err.message);
    if (state !== undefined) u.searchParams.set("state", state);
    u.searchParams.set("iss", deps.issuer);
    return u.toString();
  }

  function dropGrant(grantId: string): void {
    const g = oauthState.grants.find((x) => x.id === grantId);
    if (!g) return;
    for (const a of g.access) accessIndex.delete(a.hash);
    oauthState.grants = oauthState.grants.filter((x) => x.id !== grantId);
  }

  function sweepCodes(now: number): void {
    for (const [k, c] of codes) if (c.expires_at <= now) codes.delete(k);
  }

  function pruneUnapprovedAtCap(): void {
    if (oauthState.clients.length < deps.maxClients) return;
    const cutoff = deps.clock.now() - UNAPPROVED_PRUNE_MS;
    oauthState.clients = oauthState.clients.filter(
      (c) => c.approved_at !== null || Date.parse(c.created_at) > cutoff,
    );
  }

  /** Drop expired tokens and grants; rebuild the access index. */
  function prune(): void {
    const now = deps.clock.now();
    oauthState.grants = oauthState.grants.filter(
      (g) => g.refresh_expires_at > now && oauthState.clients.some((c) => c.client_id === g.client_id),
    );
    accessIndex.clear();
    for (const g of oauthState.grants) {
      g.access = g.access.filter((a) => a.expires_at > now);
      for (const a of g.access) accessIndex.set(a.hash, { grantId: g.id, expiresAt: a.expires_at });
    }
  }

  function persist(): Promise<void> {
    prune();
    return deps.stateFile.save(oauthState);
  }

  return {
    issuer: deps.issuer,
    resource: mcpResource,
    authorizationServerMetadata,
    protectedResourceMetadata,
    register,
    checkAuthorize,
    consentAllowed,
    consentRetryAfterS,
    decide,
    authenticateClient,
    token,
    revoke,
    verifyAccessToken,
    listClients,
    deleteClient,
    client: clientById,
    flush,
  };
}

/** RFC 7591 3.2.2 `invalid_redirect_uri`. */
export class OAuthRedirectUriError extends OAuthError {
  static override errorCode = "invalid_redirect_uri";
}
