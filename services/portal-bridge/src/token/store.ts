import { randomBytes } from "node:crypto";
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";

/**
 * The saved replacement token in STATE_DIR: written to a sibling temp file with mode 0600,
 * fsynced, renamed into place, and the folder fsynced, so a crash leaves the old file or the
 * new one, never half of either.
 */
export const TOKEN_FILE = "portal-token.json";

export interface SavedToken {
  token: string;
  saved_at: string;
}

export class TokenStore {
  constructor(private readonly dir: string) {}

  get file(): string {
    return join(this.dir, TOKEN_FILE);
  }

  async load(): Promise<SavedToken | null> {
    let text: string;
    try {
      text = await readFile(this.file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
      throw err;
    }
    try {
      const v = JSON.parse(text) as Partial<SavedToken>;
      return typeof v.token === "string" && v.token !== ""
        ? { token: v.token, saved_at: String(v.saved_at ?? "") }
        : null;
    } catch {
      return null;
    }
  }

  async save(token: string, savedAt: string): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const tmp = join(this.dir, `.${TOKEN_FILE}.${randomBytes(6).toString("hex")}.tmp`);
    const body = JSON.stringify({ token, saved_at: savedAt } satisfies SavedToken);
    try {
      const fh = await open(tmp, "wx", 0o600);
      try {
        await fh.writeFile(body, "utf8");
        await fh.sync();
      } finally {
        await fh.close();
      }
      await rename(tmp, this.file);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    }
    const dirHandle = await open(this.dir, "r");
    try {
      await dirHandle.sync();
    } finally {
      await dirHandle.close();
    }
  }
}
