import { mkdir, open, rename, unlink } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";
import { ownedTempPath } from "./temp-owners.js";

/**
 * Media files live under `mediaDir`; rows store paths relative to it (`originals/<id>.<ext>`,
 * `derivatives/<id>-thumbnail.jpg`) so the data folder can move.
 */
export const ORIGINALS = "originals";
export const DERIVATIVES = "derivatives";

export const originalRelPath = (id: string, ext: string) => `${ORIGINALS}/${id}.${ext}`;
export const derivativeRelPath = (id: string, variant: string) => `${DERIVATIVES}/${id}-${variant}.jpg`;

/** Absolute path of a stored relative media path; refuses anything that escapes mediaDir. */
export function resolveMediaPath(mediaDir: string, rel: string): string {
  const root = resolve(mediaDir);
  const abs = resolve(root, rel);
  if (!abs.startsWith(root + sep)) throw new Error("media path escapes the media folder");
  return abs;
}

export async function ensureMediaDirs(mediaDir: string): Promise<void> {
  await mkdir(join(mediaDir, ORIGINALS), { recursive: true });
  await mkdir(join(mediaDir, DERIVATIVES), { recursive: true });
}

export async function fsyncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Rename a fully written and fsynced temp file into place, then make the rename durable. */
export async function publishFile(tempPath: string, finalPath: string): Promise<void> {
  await rename(tempPath, finalPath);
  await fsyncDir(dirname(finalPath));
}

/** Write a buffer durably: temp file (of `owner`, see temp-owners.ts), fsync, rename, fsync the folder. */
export async function writeFileDurably(finalPath: string, data: Uint8Array, owner: string): Promise<void> {
  const tmp = ownedTempPath(finalPath, owner);
  await mkdir(dirname(finalPath), { recursive: true });
  const fh = await open(tmp, "wx");
  try {
    await fh.writeFile(data);
    await fh.sync();
  } catch (err) {
    await fh.close().catch(() => {});
    await removeQuietly(tmp);
    throw err;
  }
  await fh.close();
  try {
    await publishFile(tmp, finalPath);
  } catch (err) {
    await removeQuietly(tmp);
    throw err;
  }
}

/** Unlink, ignoring a file that is already gone. */
export async function removeQuietly(path: string): Promise<void> {
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "ENOENT") throw err;
  });
}
