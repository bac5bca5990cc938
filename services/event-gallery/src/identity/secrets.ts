import { randomBytes, randomInt } from "node:crypto";
import { hash, type Options, verify } from "@node-rs/argon2";

// Argon2id (the library's default algorithm is Argon2id too; stated for clarity). The native
// library hashes on the libuv thread pool, so the event loop keeps serving other requests.
const OPTIONS: Options = {
  algorithm: 2 as Options["algorithm"],
  memoryCost: 19456,
  timeCost: 2,
  parallelism: 1,
};

export const hashSecret = (secret: string) => hash(secret, OPTIONS);

export async function verifySecret(stored: string, secret: string): Promise<boolean> {
  try {
    return await verify(stored, secret);
  } catch {
    return false;
  }
}

/** A fresh 4-digit PIN, leading zeros kept. */
export const newPin = () => String(randomInt(0, 10_000)).padStart(4, "0");

/** A random admin password for first start (printed once, stored only as a hash). */
export const newPassword = () => randomBytes(18).toString("base64url");

let dummy: Promise<string> | null = null;
/**
 * Verify against a hash of a random value, so an unknown name costs the same time as a known one.
 */
export async function verifyDummy(secret: string): Promise<false> {
  dummy ??= hashSecret(randomBytes(16).toString("hex"));
  await verifySecret(await dummy, secret);
  return false;
}
