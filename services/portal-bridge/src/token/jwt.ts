/**
 * Reading the upstream token. The bridge never verifies the signature (it cannot: the portal
 * holds the key); it decodes the claims only to learn dates and ids (seed rule 6).
 */
export interface TokenClaims {
  /** Expiry, epoch ms. */
  exp: number;
  /** Issue time, epoch ms (null when the token carries no iat). */
  iat: number | null;
  userId: string;
  accountId: string;
  jti: string;
}

export class MalformedTokenError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = "MalformedTokenError";
  }
}

const SEGMENT = /^[A-Za-z0-9_-]+$/;

function decodeSegment(seg: string): unknown {
  try {
    return JSON.parse(Buffer.from(seg, "base64url").toString("utf8"));
  } catch {
    throw new MalformedTokenError("The token is not a JWT (its parts are not base64url JSON).");
  }
}

const idOf = (v: unknown): string | null =>
  typeof v === "string" && v.length > 0 ? v : typeof v === "number" ? String(v) : null;

/** Decode (without verifying) the claims the bridge needs; throws MalformedTokenError. */
export function decodeClaims(token: string): TokenClaims {
  const parts = token.split(".");
  if (parts.length !== 3 || !parts.every((p, i) => (i === 2 ? p === "" || SEGMENT.test(p) : SEGMENT.test(p))))
    throw new MalformedTokenError("The token is not a JWT (expected three base64url parts).");
  const header = decodeSegment(parts[0] as string);
  const payload = decodeSegment(parts[1] as string);
  if (!header || typeof header !== "object" || !payload || typeof payload !== "object")
    throw new MalformedTokenError("The token is not a JWT (header or payload is not an object).");
  const p = payload as Record<string, unknown>;
  if (typeof p.exp !== "number" || !Number.isFinite(p.exp))
    throw new MalformedTokenError("The token has no expiry (exp claim).");
  const userId = idOf(p.userId);
  const accountId = idOf(p.accountId);
  const jti = idOf(p.jti);
  if (!userId) throw new MalformedTokenError("The token has no userId claim.");
  if (!accountId) throw new MalformedTokenError("The token has no accountId claim.");
  if (!jti) throw new MalformedTokenError("The token has no jti claim.");
  return {
    exp: p.exp * 1000,
    iat: typeof p.iat === "number" && Number.isFinite(p.iat) ? p.iat * 1000 : null,
    userId,
    accountId,
    jti,
  };
}

/**
 * Clean a pasted value: accepts the bare token, a `jwt=...; Path=/` cookie form (also inside a
 * longer Cookie header), surrounding quotes, whitespace and newlines.
 */
export function cleanPaste(raw: string): string {
  let s = raw.replace(/[\r\n\t]+/g, "").trim();
  s = stripQuotes(s);
  const cookie = /(?:^|[;\s])jwt\s*=\s*([^;\s]+)/i.exec(s);
  if (cookie?.[1]) s = cookie[1];
  else s = (s.split(";")[0] ?? "").trim();
  s = stripQuotes(s.replace(/^bearer\s+/i, "").trim());
  return s.replace(/\s+/g, "");
}

function stripQuotes(s: string): string {
  let out = s;
  while (out.length >= 2 && /^["'`]/.test(out) && out.endsWith(out[0] as string))
    out = out.slice(1, -1).trim();
  return out.replace(/^["'`]+|["'`]+$/g, "");
}
