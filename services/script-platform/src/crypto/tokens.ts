import { createHash, randomBytes } from "node:crypto";

/** An opaque credential: 32 random bytes, base64url (43 characters). */
export function newToken(prefix = ""): string {
  return `${prefix}${randomBytes(32).toString("base64url")}`;
}

/** What we store instead of a token: its SHA-256, lowercase hex. */
export function sha256Hex(value: string): string {
  return createHash("sha256").update(value, "utf8").digest("hex");
}

/** A random password for generated accounts: 24 base64url characters (144 bits). */
export function randomPassword(): string {
  return randomBytes(18).toString("base64url");
}
