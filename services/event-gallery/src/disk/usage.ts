import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";

/** Bytes of regular files below `dir` (symlinks are not followed; a missing folder is 0). */
export async function folderBytes(dir: string): Promise<number> {
  let entries: import("node:fs").Dirent[];
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw err;
  }
  let total = 0;
  for (const e of entries) {
    const p = join(dir, e.name);
    if (e.isDirectory()) total += await folderBytes(p);
    else if (e.isFile()) {
      try {
        total += (await lstat(p)).size;
      } catch (err) {
        // A file reclaimed while we walk is simply no longer counted.
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
    }
  }
  return total;
}

/** Media usage: everything under the media folder, and its originals/ and derivatives/ parts. */
export async function mediaUsage(mediaDir: string) {
  const [media, originals, derivatives] = await Promise.all([
    folderBytes(mediaDir),
    folderBytes(join(mediaDir, "originals")),
    folderBytes(join(mediaDir, "derivatives")),
  ]);
  return { media_bytes: media, originals_bytes: originals, derivatives_bytes: derivatives };
}
