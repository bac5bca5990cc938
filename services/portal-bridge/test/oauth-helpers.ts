import { createServer } from "node:net";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from "@modelcontextprotocol/sdk/shared/auth.js";
import { AUTH, type Harness, type HarnessOptions, startHarness } from "./helpers.js";

/** A port that was free a moment ago (the OAuth issuer must be known before the app is built). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

/** The bridge with MCP_OAUTH=on, listening on a port whose origin is MCP_PUBLIC_URL. */
export async function startOAuthHarness(opts: HarnessOptions = {}): Promise<Harness> {
  const port = await freePort();
  const origin = `http://127.0.0.1:${port}`;
  const h = await startHarness({
    ...opts,
    env: { MCP_OAUTH: "on", MCP_PUBLIC_URL: origin, ...opts.env },
  });
  await h.built.app.listen({ port, host: "127.0.0.1" });
  h.url = origin;
  return h;
}

export const REDIRECT = "http://127.0.0.1:47123/callback";

/**
 * An OAuth client provider as an MCP client application would write it, kept in memory. The
 * "browser" is the test: `redirectToAuthorization` records the URL the user would be sent to.
 */
export class MemoryOAuthProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = "";
  authorizationUrls: URL[] = [];
  tokenSaves = 0;

  constructor(private readonly metadata: Partial<OAuthClientMetadata> = {}) {}

  get redirectUrl(): string {
    return REDIRECT;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: "Test Assistant",
      redirect_uris: [REDIRECT],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
      ...this.metadata,
    };
  }

  clientInformation() {
    return this.info;
  }

  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }

  tokens() {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
    this.tokenSaves += 1;
  }

  redirectToAuthorization(url: URL) {
    this.authorizationUrls.push(url);
  }

  saveCodeVerifier(v: string) {
    this.verifier = v;
  }

  codeVerifier() {
    return this.verifier;
  }
}

/**
 * The owner answers the consent page for `authorizationUrl` (a real form post, as the browser
 * would send it) and returns the redirect location.
 */
export async function approve(authorizationUrl: URL, secret = AUTH, decision = "approve"): Promise<Response> {
  const form = new URLSearchParams(authorizationUrl.searchParams);
  form.set("owner_secret", secret);
  form.set("decision", decision);
  return fetch(new URL("/oauth/authorize", authorizationUrl), {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", origin: authorizationUrl.origin },
    body: form.toString(),
    redirect: "manual",
  });
}

/** The code from a consent redirect. */
export function codeOf(res: Response): string {
  const loc = res.headers.get("location");
  if (!loc) throw new Error(`no redirect (status ${res.status})`);
  const code = new URL(loc).searchParams.get("code");
  if (!code) throw new Error(`no code in the redirect: ${new URL(loc).searchParams.get("error")}`);
  return code;
}
