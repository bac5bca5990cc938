import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from "node:fs";
import { dirname, join } from "node:path";

/**
 * AES-256-GCM under the master key (PLATFORM_SECRET_KEY). Used for app secrets, per-app signing
 * keys and inbound email secrets. Sealed values are text, safe for a TEXT column:
 * `v1.<base64url(iv 12 B | tag 16 B | ciphertext)>`. An optional `aad` binds a value to where
 * it belongs (e.g. `secret:<app_id>:<name>`), so a row copied elsewhere fails to open.
 */
export interface SecretBox {
  seal(plaintext: string | Uint8Array, aad?: string): string;
  open(sealed: string, aad?: string): Buffer;
  openString(sealed: string, aad?: string): string;
}

export class SecretBoxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SecretBoxError";
  }
}

const VERSION = "v1.";

export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new SecretBoxError("the master key must be 32 bytes");
  const open = (sealed: string, aad?: string): Buffer => {
    if (!sealed.startsWith(VERSION)) throw new SecretBoxError("unknown sealed value format");
    const raw = Buffer.from(sealed.slice(VERSION.length), "base64url");
    if (raw.length < 28) throw new SecretBoxError("sealed value is truncated");
    const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    if (aad !== undefined) decipher.setAAD(Buffer.from(aad, "utf8"));
    try {
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]);
    } catch {
      throw new SecretBoxError("sealed value failed authentication (wrong key or tampered)");
    }
  };
  return {
    seal(plaintext, aad) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      if (aad !== undefined) cipher.setAAD(Buffer.from(aad, "utf8"));
      const data = typeof plaintext === "string" ? Buffer.from(plaintext, "utf8") : plaintext;
      const ct = Buffer.concat([cipher.update(data), cipher.final()]);
      return VERSION + Buffer.concat([iv, cipher.getAuthTag(), ct]).toString("base64url");
    },
    open,
    openString: (sealed, aad) => open(sealed, aad).toString("utf8"),
  };
}

/**
 * The master key: PLATFORM_SECRET_KEY when set; otherwise DATA_DIR/secret.key, generated once
 * (atomically, mode 0600) on a fresh install. Returns whether it was generated.
 */
export function loadMasterKey(
  configured: string | undefined,
  dataDir: string,
): { key: Buffer; generated: boolean } {
  if (configured) return { key: Buffer.from(configured, "hex"), generated: false };
  const file = join(dataDir, "secret.key");
  try {
    const text = readFileSync(file, "utf8").trim();
    if (!/^[0-9a-fA-F]{64}$/.test(text))
      throw new SecretBoxError("DATA_DIR/secret.key is not 64 hex characters");
    return { key: Buffer.from(text, "hex"), generated: false };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  const key = randomBytes(32);
  mkdirSync(dataDir, { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  const fd = openSync(tmp, "w", 0o600);
  try {
    writeSync(fd, `${key.toString("hex")}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  const dirFd = openSync(dirname(file), "r");
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
  return { key, generated: true };
}
