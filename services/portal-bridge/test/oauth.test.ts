import { createHash, randomBytes } from "node:crypto";
import { readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { loadEnv } from "@app/kit/config";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterEach, describe, expect, it } from "vitest";
import { buildApp } from "../src/app.js";
import { envSpec } from "../src/config.js";
import { OAUTH_FILE } from "../src/oauth/state.js";
import { AUTH, CONNECTOR, type Harness, textOf } from "./helpers.js";
import { approve, codeOf, MemoryOAuthProvider, REDIRECT, startOAuthHarness } from "./oauth-helpers.js";

let h: Harness | undefined;
afterEach(async () => {
  await h?.close();
  h = undefined;
});

const form = (o: Record<string, string>) => ({
  method: "POST",
  headers: { "content-type": "application/x-www-form-urlencoded" },
  body: new URLSearchParams(o).toString(),
});

const pkce = () => {
  const verifier = randomBytes(32).toString("base64url");
  return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
};

async function register(url: string, meta: Record<string, unknown> = {}) {
  const res = await fetch(`${url}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      client_name: "Raw Client",
      redirect_uris: [REDIRECT],
      token_endpoint_auth_method: "none",
      ...meta,
    }),
  });
  return { res, body: (await res.json()) as Record<string, unknown> };
}

function authorizeUrl(url: string, clientId: string, challenge: string, extra: Record<string, string> = {}) {
  const u = new URL(`${url}/oauth/authorize`);
  for (const [k, v] of Object.entries({
    response_type: "code",
    client_id: clientId,
    redirect_uri: REDIRECT,
    code_challenge: challenge,
    code_challenge_method: "S256",
    state: "st-1",
    scope: "mcp",
    ...extra,
  }))
    u.searchParams.set(k, v);
  return u;
}

/** Register, approve and exchange by hand; returns the client id and the token response. */
async function rawGrant(url: string) {
  const { body } = await register(url);
  const clientId = body.client_id as string;
  const { verifier, challenge } = pkce();
  const code = codeOf(await approve(authorizeUrl(url, clientId, challenge)));
  const res = await fetch(
    `${url}/oauth/token`,
    form({
      grant_type: "authorization_code",
      code,
      code_verifier: verifier,
      client_id: clientId,
      redirect_uri: REDIRECT,
    }),
  );
  expect(res.status).toBe(200);
  return { clientId, code, verifier, tokens: (await res.json()) as Record<string, string | number> };
}

/** A refresh_token grant of a public client. */
const refresh = (url: string, refreshToken: string, clientId: string) =>
  fetch(
    `${url}/oauth/token`,
    form({ grant_type: "refresh_token", refresh_token: refreshToken, client_id: clientId }),
  );

const mcpCall = (url: string, token: string) =>
  fetch(`${url}/mcp`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
    },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
  });

describe("OAuth 2.1 for remote connectors (MCP_OAUTH=on)", () => {
  it("publishes protected-resource and authorization-server metadata, and points 401s at them", async () => {
    h = await startOAuthHarness();
    const prm = await (await fetch(`${h.url}/.well-known/oauth-protected-resource/mcp`)).json();
    expect(prm).toMatchObject({
      resource: `${h.url}/mcp`,
      authorization_servers: [h.url],
      scopes_supported: ["mcp"],
    });
    const asm = await (await fetch(`${h.url}/.well-known/oauth-authorization-server`)).json();
    expect(asm).toMatchObject({
      issuer: h.url,
      authorization_endpoint: `${h.url}/oauth/authorize`,
      token_endpoint: `${h.url}/oauth/token`,
      registration_endpoint: `${h.url}/oauth/register`,
      revocation_endpoint: `${h.url}/oauth/revoke`,
      code_challenge_methods_supported: ["S256"],
      grant_types_supported: ["authorization_code", "refresh_token"],
    });
    const res = await fetch(`${h.url}/mcp`, { method: "POST" });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toBe(
      `Bearer resource_metadata="${h.url}/.well-known/oauth-protected-resource"`,
    );
    // Cross-origin callers (browser-based clients) may read the metadata.
    const cors = await fetch(`${h.url}/.well-known/oauth-authorization-server`, {
      headers: { origin: "https://client.example" },
    });
    expect(cors.status).toBe(200);
    expect(cors.headers.get("access-control-allow-origin")).toBe("*");
  });

  it("an unmodified SDK client connects after one approval, refreshes, and is cut off by revocation", async () => {
    // The session must outlive the hour the clock jumps (a held stream does not keep it).
    h = await startOAuthHarness({ env: { MCP_SESSION_IDLE_MS: String(2 * 3600_000) } });
    const provider = new MemoryOAuthProvider();
    const connect = async () => {
      const client = new Client({ name: "oauth-client", version: "1.0.0" });
      const transport = new StreamableHTTPClientTransport(new URL(`${h?.url}/mcp`), {
        authProvider: provider,
      });
      await client.connect(transport);
      return { client, transport };
    };

    // 1. Discovery + registration, then the SDK sends the user to the consent page.
    const first = new StreamableHTTPClientTransport(new URL(`${h.url}/mcp`), { authProvider: provider });
    await expect(new Client({ name: "oauth-client", version: "1.0.0" }).connect(first)).rejects.toThrow(
      /unauthorized/i,
    );
    expect(provider.info?.client_id).toBeTruthy();
    expect(provider.authorizationUrls).toHaveLength(1);
    const authUrl = provider.authorizationUrls[0] as URL;
    expect(authUrl.origin + authUrl.pathname).toBe(`${h.url}/oauth/authorize`);
    expect(authUrl.searchParams.get("code_challenge_method")).toBe("S256");

    // 2. The owner sees the page naming the client and its redirect URI, and approves it.
    const page = await (await fetch(authUrl)).text();
    expect(page).toContain("Test Assistant");
    expect(page).toContain(REDIRECT);
    const consent = await approve(authUrl);
    expect(consent.status).toBe(302);
    const back = new URL(consent.headers.get("location") as string);
    expect(back.origin + back.pathname).toBe(REDIRECT);
    expect(back.searchParams.get("iss")).toBe(h.url);
    await first.finishAuth(codeOf(consent));
    expect(provider.saved?.refresh_token).toBeTruthy();

    // 3. Connected: tools work with the access token.
    const { client, transport } = await connect();
    const status = await client.callTool({ name: "connection_status", arguments: {} });
    expect(status.isError).toBeFalsy();
    expect(textOf(status)).not.toContain(AUTH);

    // 4. The access token expires after an hour; the SDK refreshes (rotation) on the 401 by itself.
    const firstRefresh = provider.saved?.refresh_token;
    await h.clock.advance(3600_000 + 1000);
    await client.listTools();
    expect(provider.saved?.refresh_token).toBeTruthy();
    expect(provider.saved?.refresh_token).not.toBe(firstRefresh);

    // 5. The owner lists and revokes the client; the next call fails and no refresh revives it.
    const list = (await (
      await fetch(`${h.url}/api/oauth/clients`, { headers: { authorization: `Bearer ${AUTH}` } })
    ).json()) as { clients: { last_used_at: string | null }[] };
    expect(list.clients).toEqual([
      expect.objectContaining({
        client_id: provider.info?.client_id,
        client_name: "Test Assistant",
        redirect_uris: [REDIRECT],
      }),
    ]);
    expect(list.clients[0]?.last_used_at).not.toBeNull();
    const del = await fetch(`${h.url}/api/oauth/clients/${provider.info?.client_id}`, {
      method: "DELETE",
      headers: { authorization: `Bearer ${AUTH}` },
    });
    expect(del.status).toBe(204);
    await expect(client.listTools()).rejects.toThrow();
    const again = await fetch(`${h.url}/api/oauth/clients`, { headers: { authorization: `Bearer ${AUTH}` } });
    expect(((await again.json()) as { clients: unknown[] }).clients).toEqual([]);
    await transport.close().catch(() => undefined);
  });

  it("refuses a wrong verifier, a reused code (revoking what it issued), and an expired code", async () => {
    h = await startOAuthHarness();
    const { body } = await register(h.url);
    const clientId = body.client_id as string;

    const a = pkce();
    const codeA = codeOf(await approve(authorizeUrl(h.url, clientId, a.challenge)));
    const wrong = await fetch(
      `${h.url}/oauth/token`,
      form({
        grant_type: "authorization_code",
        code: codeA,
        code_verifier: pkce().verifier,
        client_id: clientId,
        redirect_uri: REDIRECT,
      }),
    );
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toMatchObject({ error: "invalid_grant" });

    const ok = await fetch(
      `${h.url}/oauth/token`,
      form({
        grant_type: "authorization_code",
        code: codeA,
        code_verifier: a.verifier,
        client_id: clientId,
        redirect_uri: REDIRECT,
      }),
    );
    expect(ok.status).toBe(200);
    expect(ok.headers.get("cache-control")).toBe("no-store");
    const tokens = (await ok.json()) as {
      access_token: string;
      token_type: string;
      expires_in: number;
      scope: string;
    };
    expect(tokens).toMatchObject({ token_type: "Bearer", expires_in: 3600, scope: "mcp" });
    expect((await mcpCall(h.url, tokens.access_token)).status).toBe(200);

    const replay = await fetch(
      `${h.url}/oauth/token`,
      form({
        grant_type: "authorization_code",
        code: codeA,
        code_verifier: a.verifier,
        client_id: clientId,
        redirect_uri: REDIRECT,
      }),
    );
    expect(await replay.json()).toMatchObject({ error: "invalid_grant" });
    // The replay ended what the first exchange issued.
    expect((await mcpCall(h.url, tokens.access_token)).status).toBe(401);

    const b = pkce();
    const codeB = codeOf(await approve(authorizeUrl(h.url, clientId, b.challenge)));
    await h.clock.advance(61_000);
    const late = await fetch(
      `${h.url}/oauth/token`,
      form({
        grant_type: "authorization_code",
        code: codeB,
        code_verifier: b.verifier,
        client_id: clientId,
        redirect_uri: REDIRECT,
      }),
    );
    expect(await late.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("never redirects to a URI the client did not register, and registers only https or loopback http", async () => {
    h = await startOAuthHarness();
    const bad = await register(h.url, { redirect_uris: ["http://evil.example/cb"] });
    expect(bad.res.status).toBe(400);
    expect(bad.body).toMatchObject({ error: "invalid_redirect_uri" });
    const frag = await register(h.url, { redirect_uris: ["https://app.example/cb#x"] });
    expect(frag.body).toMatchObject({ error: "invalid_redirect_uri" });

    const { body } = await register(h.url);
    const clientId = body.client_id as string;
    const foreign = await fetch(
      authorizeUrl(h.url, clientId, pkce().challenge, { redirect_uri: "https://evil.example/cb" }),
      {
        redirect: "manual",
      },
    );
    expect(foreign.status).toBe(400);
    expect(foreign.headers.get("location")).toBeNull();
    expect(await foreign.text()).not.toContain("evil.example");

    const unknown = await fetch(authorizeUrl(h.url, "no-such-client", pkce().challenge), {
      redirect: "manual",
    });
    expect(unknown.status).toBe(400);
    expect(unknown.headers.get("location")).toBeNull();

    // Errors after the client and redirect URI are known go back to the client, with its state.
    const plain = await fetch(
      authorizeUrl(h.url, clientId, pkce().challenge, { code_challenge_method: "plain" }),
      {
        redirect: "manual",
      },
    );
    expect(plain.status).toBe(302);
    const loc = new URL(plain.headers.get("location") as string);
    expect(loc.searchParams.get("error")).toBe("invalid_request");
    expect(loc.searchParams.get("state")).toBe("st-1");

    const denied = await approve(authorizeUrl(h.url, clientId, pkce().challenge), "", "deny");
    expect(new URL(denied.headers.get("location") as string).searchParams.get("error")).toBe("access_denied");
  });

  it("the consent page needs MCP_AUTH_TOKEN and limits wrong attempts", async () => {
    h = await startOAuthHarness();
    const { body } = await register(h.url);
    const url = authorizeUrl(h.url, body.client_id as string, pkce().challenge);
    for (let i = 0; i < 5; i++) {
      const res = await approve(url, CONNECTOR);
      expect(res.status).toBe(401);
      expect(res.headers.get("location")).toBeNull();
    }
    const locked = await approve(url, AUTH);
    expect(locked.status).toBe(429);
    expect(Number(locked.headers.get("retry-after"))).toBeGreaterThan(0);
    await h.clock.advance(15 * 60_000);
    expect((await approve(url, AUTH)).status).toBe(302);
  });

  it("rotates refresh tokens, and a reused refresh token revokes the whole grant", async () => {
    h = await startOAuthHarness();
    const { clientId, tokens } = await rawGrant(h.url);
    const r1 = await refresh(h.url, tokens.refresh_token as string, clientId);
    const t2 = (await r1.json()) as Record<string, string>;
    expect(t2.refresh_token).not.toBe(tokens.refresh_token);
    expect((await mcpCall(h.url, t2.access_token as string)).status).toBe(200);

    const reuse = await refresh(h.url, tokens.refresh_token as string, clientId);
    expect(await reuse.json()).toMatchObject({ error: "invalid_grant" });
    expect((await mcpCall(h.url, t2.access_token as string)).status).toBe(401);
    const afterReuse = await refresh(h.url, t2.refresh_token as string, clientId);
    expect(await afterReuse.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("an expired access token gets invalid_token; a refresh token lapses after 30 idle days", async () => {
    // No keep-alive: 30 fake days would otherwise fire 1,440 pings.
    h = await startOAuthHarness({ env: { KEEPALIVE_INTERVAL_MS: "0" } });
    const { clientId, tokens } = await rawGrant(h.url);
    await h.clock.advance(3600_000);
    const res = await mcpCall(h.url, tokens.access_token as string);
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
    await h.clock.advance(30 * 24 * 3600_000);
    const late = await refresh(h.url, tokens.refresh_token as string, clientId);
    expect(await late.json()).toMatchObject({ error: "invalid_grant" });
  });

  it("RFC 7009 revocation; access tokens open /mcp only, never /api", async () => {
    h = await startOAuthHarness();
    const { clientId, tokens } = await rawGrant(h.url);
    const api = await fetch(`${h.url}/api/token`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(api.status).toBe(401);
    const rv = await fetch(
      `${h.url}/oauth/revoke`,
      form({ token: tokens.refresh_token as string, client_id: clientId }),
    );
    expect(rv.status).toBe(200);
    expect((await mcpCall(h.url, tokens.access_token as string)).status).toBe(401);
    // Unknown tokens are no error (RFC 7009 2.2).
    expect((await fetch(`${h.url}/oauth/revoke`, form({ token: "nope", client_id: clientId }))).status).toBe(
      200,
    );
    // A confidential client must authenticate.
    const conf = await register(h.url, { token_endpoint_auth_method: "client_secret_basic" });
    expect(conf.body.client_secret).toBeTruthy();
    const noSecret = await fetch(
      `${h.url}/oauth/revoke`,
      form({ token: "x", client_id: conf.body.client_id as string }),
    );
    expect(noSecret.status).toBe(401);
    expect(await noSecret.json()).toMatchObject({ error: "invalid_client" });
    const basic = Buffer.from(`${conf.body.client_id}:${conf.body.client_secret}`).toString("base64");
    const withBasic = await fetch(`${h.url}/oauth/revoke`, {
      ...form({ token: "x" }),
      headers: { "content-type": "application/x-www-form-urlencoded", authorization: `Basic ${basic}` },
    });
    expect(withBasic.status).toBe(200);
  });

  it("caps registrations (MCP_OAUTH_MAX_CLIENTS); approved clients stay, stale unapproved ones make room", async () => {
    h = await startOAuthHarness({ env: { MCP_OAUTH_MAX_CLIENTS: "2" } });
    await rawGrant(h.url); // approved: never pruned
    expect((await register(h.url)).res.status).toBe(201);
    const full = await register(h.url);
    expect(full.res.status).toBe(403);
    expect(full.body).toMatchObject({ error: "access_denied" });
    await h.clock.advance(3600_000 + 1);
    expect((await register(h.url)).res.status).toBe(201);
    expect((await register(h.url)).res.status).toBe(403);
  });

  it("rate-limits registrations per address (10 an hour)", async () => {
    h = await startOAuthHarness();
    for (let i = 0; i < 10; i++) expect((await register(h.url)).res.status).toBe(201);
    const limited = await register(h.url);
    expect(limited.res.status).toBe(429);
    expect(limited.body).toMatchObject({ error: "too_many_requests" });
    expect(limited.res.headers.get("retry-after")).toBeTruthy();
  });

  it("keeps only hashes in STATE_DIR (0600) and tokens survive a restart", async () => {
    h = await startOAuthHarness();
    const { tokens, code, verifier } = await rawGrant(h.url);
    const file = join(h.dataDir, OAUTH_FILE);
    const text = await readFile(file, "utf8");
    for (const secret of [tokens.access_token, tokens.refresh_token, code, verifier])
      expect(text).not.toContain(secret);
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const port = new URL(h.url).port;
    await h.built.app.close();
    await h.built.close();
    const again = await buildApp(
      loadEnv(envSpec, {
        DATA_DIR: h.dataDir,
        MCP_AUTH_TOKEN: AUTH,
        MCP_OAUTH: "on",
        MCP_PUBLIC_URL: h.url,
        KEEPALIVE_INTERVAL_MS: "0",
      }),
      { logger: h.logs.logger, clock: h.clock },
    );
    try {
      const res = await again.app.inject({
        method: "POST",
        url: "/mcp",
        headers: {
          host: `127.0.0.1:${port}`,
          authorization: `Bearer ${tokens.access_token}`,
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
        },
        payload: { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} },
      });
      expect(res.statusCode).toBe(200);
    } finally {
      await again.app.close();
      await again.close();
    }
  });

  it("no token, code, verifier or secret reaches a log line", async () => {
    h = await startOAuthHarness();
    const { clientId, tokens, code, verifier } = await rawGrant(h.url);
    await refresh(h.url, tokens.refresh_token as string, clientId);
    await approve(authorizeUrl(h.url, clientId, pkce().challenge), "wrong-secret-value-123");
    const text = h.logs.text();
    expect(text).toContain("OAuth client approved");
    for (const s of [
      AUTH,
      tokens.access_token,
      tokens.refresh_token,
      code,
      verifier,
      "wrong-secret-value-123",
    ])
      expect(text).not.toContain(String(s));
  });
});

describe("OAuth routes in the OpenAPI document", () => {
  it("every OAuth route is documented with schemas; the document validates", async () => {
    h = await startOAuthHarness();
    const { checkOpenApi } = await import("@app/kit/testing/openapi");
    const { doc, missing, withoutSchema } = await checkOpenApi(h.built.app, "/api/openapi.json");
    expect(missing).toEqual([]);
    expect(withoutSchema).toEqual([]);
    expect(Object.keys(doc.paths ?? {})).toEqual(
      expect.arrayContaining([
        "/.well-known/oauth-authorization-server",
        "/oauth/register",
        "/oauth/authorize",
        "/oauth/token",
        "/oauth/revoke",
        "/api/oauth/clients",
        "/api/oauth/clients/{clientId}",
      ]),
    );
  });
});

describe("OAuth configuration", () => {
  it("MCP_OAUTH=on needs MCP_AUTH_TOKEN and MCP_PUBLIC_URL; the public URL is an https (or loopback) origin", async () => {
    const { checkConfig } = await import("../src/config.js");
    const base = { DATA_DIR: "/tmp/x", MCP_AUTH_TOKEN: AUTH };
    expect(() => checkConfig(loadEnv(envSpec, { ...base, MCP_OAUTH: "on" }))).toThrow(/MCP_PUBLIC_URL/);
    expect(() =>
      checkConfig(
        loadEnv(envSpec, { DATA_DIR: "/tmp/x", MCP_OAUTH: "on", MCP_PUBLIC_URL: "https://b.example" }),
      ),
    ).toThrow(/MCP_AUTH_TOKEN/);
    expect(() => checkConfig(loadEnv(envSpec, { ...base, MCP_PUBLIC_URL: "http://b.example" }))).toThrow(
      /https/,
    );
    expect(() => checkConfig(loadEnv(envSpec, { ...base, MCP_PUBLIC_URL: "https://b.example/x" }))).toThrow(
      /origin/,
    );
    expect(() =>
      checkConfig(loadEnv(envSpec, { ...base, MCP_OAUTH: "on", MCP_PUBLIC_URL: "https://b.example" })),
    ).not.toThrow();
  });
});
