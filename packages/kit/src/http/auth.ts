import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingHttpHeaders } from "node:http";

/**
 * Every credential a request presents in the accepted header forms: `Authorization: Bearer X`,
 * a bare `Authorization: X`, `X-Api-Key: X`, `X-Auth-Token: X`.
 */
export function presentedCredentials(headers: IncomingHttpHeaders): string[] {
  const out: string[] = [];
  const auth = headers.authorization;
  if (typeof auth === "string" && auth.trim() !== "") {
    const m = /^Bearer\s+(.+)$/i.exec(auth.trim());
    out.push((m?.[1] ?? auth).trim());
  }
  for (const name of ["x-api-key", "x-auth-token"] as const) {
    const v = headers[name];
    if (typeof v === "string" && v.trim() !== "") out.push(v.trim());
  }
  return out;
}

const digest = (s: string) => createHash("sha256").update(s, "utf8").digest();

/**
 * Constant-time match of presented values against accepted secrets. Every (presented, accepted)
 * pair is compared in full, whatever matched earlier, so timing does not reveal which one did.
 * Returns the index of the matching accepted secret, or -1. Unset secrets never match.
 */
export function matchSecret(
  presented: readonly string[],
  accepted: readonly (string | undefined)[],
  compare: (a: Buffer, b: Buffer) => boolean = timingSafeEqual,
): number {
  let found = -1;
  const p = presented.length > 0 ? presented.map(digest) : [digest("")];
  accepted.forEach((secret, i) => {
    const a = digest(secret ?? "");
    for (const d of p) {
      const eq = compare(a, d);
      // The unset check comes after the comparison so unset slots cost the same time.
      if (eq && secret !== undefined && secret !== "" && presented.length > 0 && found === -1) found = i;
    }
  });
  return found;
}

/** Constant-time equality of two strings (via fixed-length digests). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}
