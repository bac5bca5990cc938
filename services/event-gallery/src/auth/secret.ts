import { randomBytes } from "node:crypto";
import { chmod, mkdir, open, readFile, rename } from "node:fs/promises";
import { join } from "node:path";

/**
 * The HS256 key: GALLERY_JWT_SECRET when set, else a random key generated once and kept in
 * DATA_DIR/jwt-secret (mode 0600) so sessions survive restarts.
 */
export async function loadJwtSecret(dataDir: string, configured: string | undefined): Promise<Uint8Array> {
  if (configured) return new TextEncoder().encode(configured);
  const file = join(dataDir, "jwt-secret");
  try {
    const text = (await readFile(file, "utf8")).trim();
    if (text.length >= 43) return Buffer.from(text, "base64url");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
  await mkdir(dataDir, { recursive: true });
  const key = randomBytes(32);
  const tmp = `${file}.${process.pid}.tmp`;
  const fh = await open(tmp, "w", 0o600);
  try {
    await fh.writeFile(key.toString("base64url"));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await chmod(tmp, 0o600);
  await rename(tmp, file);
  const dir = await open(dataDir, "r");
  try {
    await dir.sync();
  } finally {
    await dir.close();
  }
  return new Uint8Array(key);
}
