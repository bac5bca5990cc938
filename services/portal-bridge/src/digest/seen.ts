import { createHash } from "node:crypto";
import { readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "@app/kit/logger";
import { writeFileAtomic } from "../state/atomic-file.js";

/**
 * The bridge's record of what it has seen (STATE_DIR/seen.json, mode 0600, atomic writes): for
 * each item a hash of its identity and when it was first seen, plus when the last digest went
 * out. Only hashes are kept, never the items' text. Entries older than the retention are
 * dropped, so the file stays small.
 */
export const SEEN_FILE = "seen.json";
const RETAIN_MS = 60 * 86_400_000;
const MAX_ENTRIES = 20_000;

interface SeenFile {
  version: 1;
  last_digest_at: string | null;
  seen: Record<string, number>;
}

export const seenKey = (parts: (string | number | null | undefined)[]): string =>
  createHash("sha256")
    .update(parts.map((p) => String(p ?? "")).join("\u0000"))
    .digest("base64url")
    .slice(0, 22);

/** The state folder the record lives in, and where to report an unreadable one. */
export interface SeenStoreDeps {
  dir: string;
  logger: Pick<Logger, "warn" | "error">;
}

export type SeenStore = ReturnType<typeof createSeenStore>;

export function createSeenStore(deps: SeenStoreDeps) {
  const { dir, logger } = deps;
  let seen = new Map<string, number>();
  let lastDigestAt: number | null = null;

  async function load(): Promise<void> {
    let text: string;
    try {
      text = await readFile(join(dir, SEEN_FILE), "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT")
        logger.error(
          { state_file: SEEN_FILE, cause: (err as NodeJS.ErrnoException).code ?? "error" },
          `STATE_DIR/${SEEN_FILE} cannot be read; the digest starts with an empty record`,
        );
      return;
    }
    try {
      const v = JSON.parse(text) as Partial<SeenFile>;
      lastDigestAt = typeof v.last_digest_at === "string" ? Date.parse(v.last_digest_at) : null;
      if (Number.isNaN(lastDigestAt)) lastDigestAt = null;
      for (const [k, t] of Object.entries(v.seen ?? {})) if (typeof t === "number") seen.set(k, t);
    } catch {
      // Kept aside for a look; never logged (it is only hashes, but a corrupt file says nothing).
      await rename(join(dir, SEEN_FILE), join(dir, `${SEEN_FILE}.corrupt`)).catch(() => undefined);
      logger.warn(
        { state_file: SEEN_FILE },
        `STATE_DIR/${SEEN_FILE} was corrupt; moved aside, starting empty`,
      );
    }
  }

  /** When `key` was first seen; records `now` for a key not seen before. */
  function firstSeen(key: string, now: number): number {
    const t = seen.get(key);
    if (t !== undefined) return t;
    seen.set(key, now);
    return now;
  }

  async function save(now: number): Promise<void> {
    const entries = [...seen].filter(([, t]) => now - t < RETAIN_MS).sort((a, b) => b[1] - a[1]);
    seen = new Map(entries.slice(0, MAX_ENTRIES));
    const body: SeenFile = {
      version: 1,
      last_digest_at: lastDigestAt === null ? null : new Date(lastDigestAt).toISOString(),
      seen: Object.fromEntries(seen),
    };
    await writeFileAtomic(dir, SEEN_FILE, JSON.stringify(body));
  }

  return {
    /** When the last digest went out (null: none yet); saved with the record. */
    get lastDigestAt(): number | null {
      return lastDigestAt;
    },
    set lastDigestAt(at: number | null) {
      lastDigestAt = at;
    },
    load,
    firstSeen,
    save,
  };
}
