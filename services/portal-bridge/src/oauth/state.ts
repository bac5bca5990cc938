import { readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import type { Logger } from "@app/kit/logger";
import { writeFileAtomic } from "../state/atomic-file.js";

/**
 * What the authorization server keeps across restarts, in STATE_DIR/oauth.json (0600, atomic
 * writes). Secrets and tokens are stored only as SHA-256 hashes: a copy of the file lets nobody in.
 */
export const OAUTH_FILE = "oauth.json";

export interface ClientRecord {
  client_id: string;
  /** SHA-256 (hex) of the client secret; null for public clients (auth method `none`). */
  secret_hash: string | null;
  client_name: string | null;
  redirect_uris: string[];
  token_endpoint_auth_method: "none" | "client_secret_post" | "client_secret_basic";
  client_id_issued_at: number;
  created_at: string;
  last_used_at: string | null;
  /** Set once the owner approved this client; unapproved registrations may be pruned at the cap. */
  approved_at: string | null;
}

export interface AccessRecord {
  hash: string;
  expires_at: number;
}

/** One approval of one client: a refresh-token family and the access tokens issued from it. */
export interface GrantRecord {
  id: string;
  client_id: string;
  scope: string;
  resource: string;
  created_at: string;
  refresh_hash: string;
  refresh_expires_at: number;
  /** Refresh tokens rotated out of this family; presenting one again revokes the family. */
  spent_refresh_hashes: string[];
  access: AccessRecord[];
}

export interface OAuthState {
  version: 1;
  clients: ClientRecord[];
  grants: GrantRecord[];
}

export const emptyState = (): OAuthState => ({ version: 1, clients: [], grants: [] });

/** The state folder of the OAuth file, and the logger for a file that cannot be read. */
export interface OAuthStateFileDeps {
  dir: string;
  logger: Logger;
}

export type OAuthStateFile = ReturnType<typeof createOAuthStateFile>;

export function createOAuthStateFile(deps: OAuthStateFileDeps) {
  const { dir, logger } = deps;
  let chain: Promise<void> = Promise.resolve();

  const file = join(dir, OAUTH_FILE);

  /**
   * A missing file is a fresh start. An unreadable one is moved aside (logged, never its content)
   * so the next save cannot silently destroy what the owner may want to inspect.
   */
  async function load(): Promise<OAuthState> {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return emptyState();
      logger.error({ code }, "the OAuth state file cannot be read; starting with no connected clients");
      return emptyState();
    }
    try {
      const v = JSON.parse(text) as Partial<OAuthState>;
      if (v.version !== 1 || !Array.isArray(v.clients) || !Array.isArray(v.grants)) throw new Error("shape");
      return { version: 1, clients: v.clients, grants: v.grants };
    } catch {
      const aside = `${file}.corrupt-${Date.now()}`;
      await rename(file, aside).catch(() => undefined);
      logger.error(
        { moved_to: OAUTH_FILE.concat(aside.slice(file.length)) },
        "the OAuth state file is corrupt; moved aside, starting with no connected clients",
      );
      return emptyState();
    }
  }

  /** Saves run one after another, so an older snapshot never lands after a newer one. */
  function save(state: OAuthState): Promise<void> {
    const body = JSON.stringify(state);
    const next = chain.then(() => writeFileAtomic(dir, OAUTH_FILE, body));
    chain = next.catch(() => undefined);
    return next;
  }

  return {
    file,
    load,
    save,
  };
}
