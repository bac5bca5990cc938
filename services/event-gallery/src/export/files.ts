import { randomBytes } from "node:crypto";
import { open, rename, unlink } from "node:fs/promises";
import { dirname, join, resolve, sep } from "node:path";

/** File helpers of the export: durable publish of archives and media path resolution. */

/** Absolute path of a stored media path (relative to mediaDir); refuses paths escaping it. */
export function mediaFile(mediaDir: string, rel: string): string {
  const root = resolve(mediaDir);
  const abs = resolve(root, rel);
  if (!abs.startsWith(root + sep)) throw new Error("media path escapes the media folder");
  return abs;
}

/** A temp name in the target's folder, so the final rename stays on one filesystem. */
export const tempPathFor = (finalPath: string) =>
  join(dirname(finalPath), `.tmp-${randomBytes(8).toString("hex")}`);

async function fsyncPath(path: string, flags: string): Promise<void> {
  const fh = await open(path, flags);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** fsync a written temp file, rename it into place, fsync the folder so the rename is durable. */
export async function publishDurably(tempPath: string, finalPath: string): Promise<void> {
  await fsyncPath(tempPath, "r+");
  await rename(tempPath, finalPath);
  await fsyncPath(dirname(finalPath), "r");
}

export async function removeQuietly(path: string): Promise<void> {
  await unlink(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "ENOENT") throw err;
  });
}
