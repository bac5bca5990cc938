import { AppError, forbidden } from "@app/kit/errors";
import { matchSecret, presentedCredentials } from "@app/kit/http";
import type { FastifyRequest } from "fastify";

/**
 * Access rules for the bridge's own endpoints (seed "Toward the bridge's own endpoints"):
 * MCP_AUTH_TOKEN opens /mcp and /api, MCP_CONNECTOR_TOKEN opens /mcp only, in any of the four
 * header forms; every accepted secret is compared in full, in constant time.
 */
export type Scope = "mcp" | "api";

export interface GuardOptions {
  authToken: string | undefined;
  connectorToken: string | undefined;
  allowedHosts: string[];
  allowedOrigins: string[];
  /** With MCP_OAUTH=on: OAuth access tokens open /mcp (never /api). */
  oauth?: {
    verify(token: string): { clientId: string } | null;
    /** Named in WWW-Authenticate so clients can discover the authorization server (RFC 9728). */
    resourceMetadataUrl: string;
  };
}

/** Which credential opened a request; `oauth:<client_id>` for an OAuth access token. */
export type Credential = "auth" | "connector" | "open" | `oauth:${string}`;

/** One body for every failed credential, whichever header form was tried. */
export const unauthorizedError = (challenge = 'Bearer realm="portal-bridge"') =>
  new AppError(
    401,
    "unauthorized",
    "A valid shared secret is required (Authorization: Bearer, X-Api-Key or X-Auth-Token).",
    {},
    { "www-authenticate": challenge },
  );

export type Guard = ReturnType<typeof createGuard>;

export function createGuard(deps: GuardOptions) {
  const hosts = new Set(deps.allowedHosts.map((h) => h.toLowerCase()));
  const origins = new Set(deps.allowedOrigins.map((o) => o.toLowerCase().replace(/\/+$/, "")));

  /** True when /mcp would be open to anyone (no secret configured for it). */
  const mcpOpen = !deps.authToken && !deps.connectorToken;
  const apiOpen = !deps.authToken;

  /** DNS-rebinding protection: the Host must be allowed; an Origin must be allowed or same-origin. */
  function checkHostAndOrigin(req: FastifyRequest): void {
    const host = checkHost(req);
    const origin = req.headers.origin;
    if (origin === undefined) return;
    const o = origin.toLowerCase().replace(/\/+$/, "");
    if (origins.has(o)) return;
    let originHost: string | null = null;
    try {
      originHost = new URL(o).host;
    } catch {
      originHost = null;
    }
    // A same-origin request (the /token page calling /api/token) carries its own Host as origin.
    if (originHost !== null && originHost === host) return;
    throw forbidden("This Origin is not allowed.", "origin_not_allowed");
  }

  /** The Host check alone, for the OAuth endpoints that browser-based clients call cross-origin. */
  function checkHost(req: FastifyRequest): string {
    // The Host the client addressed (a trusted proxy's X-Forwarded-Host under TRUST_PROXY).
    const host = req.host.toLowerCase();
    if (!hostAllowed(host)) throw forbidden("This Host is not allowed.", "host_not_allowed");
    return host;
  }

  function hostAllowed(host: string): boolean {
    if (hosts.has(host)) return true;
    const name = host.startsWith("[") ? host.slice(0, host.indexOf("]") + 1) : host.replace(/:\d+$/, "");
    return hosts.has(name);
  }

  /**
   * Throws 401 (missing/wrong) or 403 (connector token on /api). Returns which credential
   * matched ("auth", "connector", "oauth:<client_id>", or "open" when no secret is configured);
   * the MCP session registry caps sessions per credential with it.
   */
  function authenticate(req: FastifyRequest, scope: Scope): Credential {
    const presented = presentedCredentials(req.headers);
    const { authToken, connectorToken } = deps;
    // Compare against both slots on every request so timing does not depend on the scope.
    const idx = matchSecret(presented, [authToken, connectorToken]);
    const label = idx === 0 ? "auth" : idx === 1 ? "connector" : "open";
    if (scope === "mcp") {
      if (mcpOpen || idx !== -1) return label;
      // OAuth access tokens open /mcp only, and only as a bearer header (RFC 6750 2.1).
      const oauth = deps.oauth;
      if (oauth) {
        const bearer = /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? "")?.[1];
        const hit = bearer ? oauth.verify(bearer) : null;
        if (hit) return `oauth:${hit.clientId}`;
        throw unauthorizedError(
          `Bearer resource_metadata="${oauth.resourceMetadataUrl}"${bearer ? ', error="invalid_token"' : ""}`,
        );
      }
      throw unauthorizedError();
    }
    if (apiOpen || idx === 0) return label;
    if (idx === 1) throw forbidden("This secret is accepted on /mcp only.", "forbidden");
    throw unauthorizedError();
  }

  /** For the /token form: a posted secret must equal MCP_AUTH_TOKEN. */
  function matchesAuthToken(value: string): boolean {
    return matchSecret([value], [deps.authToken]) === 0;
  }

  return {
    mcpOpen,
    apiOpen,
    checkHostAndOrigin,
    checkHost,
    authenticate,
    matchesAuthToken,
  };
}

/** Default MCP_ALLOWED_HOSTS: the listen host and the loopback names. */
export function defaultAllowedHosts(listenHost: string): string[] {
  const h = listenHost.includes(":") && !listenHost.startsWith("[") ? `[${listenHost}]` : listenHost;
  return [h, "localhost", "127.0.0.1", "[::1]"];
}
