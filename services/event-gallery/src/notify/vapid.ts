import { randomBytes } from "node:crypto";
import { link, mkdir, open, readFile, unlink } from "node:fs/promises";
import { join } from "node:path";
import webpush from "web-push";

export interface VapidKeys {
  /** base64url, uncompressed P-256 point: what the browser's `applicationServerKey` takes. */
  publicKey: string;
  privateKey: string;
}

/**
 * The server's VAPID key pair, generated once and kept in DATA_DIR/vapid-keys.json (mode 0600).
 * Written to a temp file first, then hard-linked into place: the link fails when the file
 * exists, so two processes starting on one data folder both end up reading the one winner.
 */
export async function loadVapidKeys(dataDir: string): Promise<VapidKeys> {
  const file = join(dataDir, "vapid-keys.json");
  const existing = await readKeys(file);
  if (existing) return existing;
  await mkdir(dataDir, { recursive: true });
  const tmp = `${file}.${randomBytes(8).toString("hex")}.tmp`;
  const fh = await open(tmp, "wx", 0o600);
  try {
    await fh.writeFile(JSON.stringify(webpush.generateVAPIDKeys()));
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await link(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
  } finally {
    await unlink(tmp);
  }
  const keys = await readKeys(file);
  if (!keys) throw new Error(`${file} does not hold a VAPID key pair`);
  return keys;
}

async function readKeys(file: string): Promise<VapidKeys | null> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  const v = JSON.parse(text) as Partial<VapidKeys>;
  if (typeof v.publicKey !== "string" || typeof v.privateKey !== "string")
    throw new Error(`${file} does not hold a VAPID key pair`);
  return { publicKey: v.publicKey, privateKey: v.privateKey };
}
