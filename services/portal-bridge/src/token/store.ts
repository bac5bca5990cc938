import { readFile } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "@app/kit/logger";
import { writeFileAtomic } from "../state/atomic-file.js";

/** The saved replacement token in STATE_DIR (0600, written atomically: see writeFileAtomic). */
export const TOKEN_FILE = "portal-token.json";

export interface SavedToken {
  token: string;
  saved_at: string;
}

/** The state folder of the token file, and who is told why a saved token could not be used (never the file's content). */
export interface TokenStoreDeps {
  dir: string;
  logger?: Pick<Logger, "warn" | "error">;
}

export type TokenStore = ReturnType<typeof createTokenStore>;

export function createTokenStore(deps: TokenStoreDeps) {
  const { dir, logger } = deps;

  const file = join(dir, TOKEN_FILE);

  async function load(): Promise<SavedToken | null> {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return null;
      if (code === "EISDIR")
        logger?.error(
          { state_file: TOKEN_FILE, cause: code },
          `the saved-token path STATE_DIR/${TOKEN_FILE} is a directory, not a file: no saved token is used and a pasted token cannot be saved; remove or rename that directory`,
        );
      else
        logger?.error(
          { state_file: TOKEN_FILE, cause: code ?? "unknown" },
          `the saved token file STATE_DIR/${TOKEN_FILE} cannot be read (${code ?? "error"}); it is ignored`,
        );
      return null;
    }
    let v: Partial<SavedToken>;
    try {
      v = JSON.parse(text) as Partial<SavedToken>;
    } catch {
      logger?.warn(
        { state_file: TOKEN_FILE, bytes: Buffer.byteLength(text) },
        `the saved token file STATE_DIR/${TOKEN_FILE} is corrupt (not JSON); it is ignored and replaced by the next pasted token`,
      );
      return null;
    }
    if (typeof v?.token === "string" && v.token !== "")
      return { token: v.token, saved_at: String(v.saved_at ?? "") };
    logger?.warn(
      { state_file: TOKEN_FILE },
      `the saved token file STATE_DIR/${TOKEN_FILE} holds no token; it is ignored`,
    );
    return null;
  }

  async function save(token: string, savedAt: string): Promise<void> {
    const body = JSON.stringify({ token, saved_at: savedAt } satisfies SavedToken);
    await writeFileAtomic(dir, TOKEN_FILE, body);
  }

  return {
    file,
    load,
    save,
  };
}
