import { createHash, randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, unlink } from "node:fs/promises";
import { dirname, join, relative, resolve, sep } from "node:path";

/**
 * Bytes of stored files under PLATFORM_FILES_ROOT. A blob is written once under a fresh name
 * (`<app_id>/<random>.bin`) — temp file in the same folder, fsync, rename, fsync the folder —
 * and only then may the row pointing at it commit. Updates write a new blob and remove the old
 * one after their row commits, so a crash never leaves a row pointing at half-written bytes.
 */
export function blobStore(root: string) {
  const abs = (rel: string) => {
    const p = resolve(root, rel);
    if (p !== resolve(root) && !p.startsWith(resolve(root) + sep))
      throw new Error("blob path escapes the files root");
    return p;
  };
  const fsyncDir = async (dir: string) => {
    const h = await open(dir, "r");
    try {
      await h.sync();
    } finally {
      await h.close();
    }
  };
  return {
    sha256: (data: Uint8Array) => createHash("sha256").update(data).digest("hex"),

    /** Durably writes the bytes; returns the path relative to the root. */
    async write(appId: string, data: Uint8Array): Promise<string> {
      const rel = join(appId.replace(/[^A-Za-z0-9-]/g, "_"), `${randomBytes(16).toString("hex")}.bin`);
      const final = abs(rel);
      const dir = dirname(final);
      await mkdir(dir, { recursive: true });
      const tmp = join(dir, `.tmp-${randomBytes(8).toString("hex")}`);
      const h = await open(tmp, "wx");
      try {
        await h.writeFile(data);
        await h.sync();
      } finally {
        await h.close();
      }
      try {
        await rename(tmp, final);
        await fsyncDir(dir);
      } catch (err) {
        await unlink(tmp).catch(() => {});
        throw err;
      }
      return relative(resolve(root), final);
    },

    read: (rel: string) => readFile(abs(rel)),

    /** Best effort: a blob no row points at is garbage, not damage. */
    async remove(rel: string): Promise<void> {
      await unlink(abs(rel)).catch(() => {});
    },
  };
}
export type BlobStore = ReturnType<typeof blobStore>;
