import { randomBytes } from "node:crypto";
import { mkdir, open, rename, rm } from "node:fs/promises";
import { join } from "node:path";

/**
 * Replace `dir/name` with `body`: written to a sibling temp file with mode 0600, fsynced, renamed
 * into place, and the folder fsynced, so a crash leaves the old file or the new one, never half
 * of either. Everything the bridge keeps in STATE_DIR goes through here.
 */
export async function writeFileAtomic(dir: string, name: string, body: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const tmp = join(dir, `.${name}.${randomBytes(6).toString("hex")}.tmp`);
  try {
    const fh = await open(tmp, "wx", 0o600);
    try {
      await fh.writeFile(body, "utf8");
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, join(dir, name));
  } catch (err) {
    await rm(tmp, { force: true });
    throw err;
  }
  const dirHandle = await open(dir, "r");
  try {
    await dirHandle.sync();
  } finally {
    await dirHandle.close();
  }
}
