import { hash, verify } from "@node-rs/argon2";

/** Argon2id (the library's default algorithm) with its default cost (19 MiB, t=2). */
export function hashPassword(password: string): Promise<string> {
  return hash(password);
}

let dummy: Promise<string> | null = null;

/**
 * Verify a password; with no stored hash (unknown user) still spend the same work, so timing
 * does not reveal which usernames exist.
 */
export async function verifyPassword(stored: string | null, password: string): Promise<boolean> {
  if (stored === null) {
    dummy ??= hash("not-a-real-password");
    await verify(await dummy, password).catch(() => false);
    return false;
  }
  return verify(stored, password).catch(() => false);
}
