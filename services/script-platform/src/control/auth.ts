import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import { AppError } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import { newToken, sha256Hex } from "../crypto/tokens.js";
import type { PlatformDB } from "../db/schema.js";
import { type AdminsRepo, type AdminView, adminsRepo } from "./admins-repository.js";
import { verifyPassword } from "./passwords.js";
import { type InstanceRole, type Principal, SCOPES, type Scope } from "./scopes.js";

/** API key secrets carry this prefix so the gate knows which table to look in. */
export const API_KEY_PREFIX = "spk_";
/** Sessions kept per admin; a new login beyond it ends the oldest session. */
export const MAX_SESSIONS_PER_ADMIN = 50;
/** last_used/expiry are written at most this often per credential (sliding lifetime granularity). */
const TOUCH_EVERY_MS = 60_000;

export interface AuthOptions {
  database: Database<PlatformDB>;
  clock: Clock;
  sessionTtlHours: number;
}

export interface LoginResult {
  token: string;
  expires_at: string;
  admin: AdminView;
}

export const invalidCredentials = () =>
  new AppError(401, "invalid_credentials", "The username or password is not correct.");

/** Sessions (opaque 32-byte tokens, SHA-256 stored, sliding lifetime) and API key lookup. */
export function createAuth(opts: AuthOptions) {
  const { database, clock } = opts;
  const repo: AdminsRepo = adminsRepo(database);
  const ttlMs = opts.sessionTtlHours * 3_600_000;

  async function principalFor(
    admin: PlatformDB["admins"],
    extra: Pick<Principal, "kind" | "id" | "appId" | "keyScopes" | "sessionId">,
  ): Promise<Principal> {
    const role = admin.instance_role as InstanceRole;
    return {
      ...extra,
      adminId: admin.id,
      username: admin.username,
      instanceRole: role,
      scopes: new Set<Scope>(role === "admin" ? SCOPES : []),
      appRoles: await repo.rolesOf(admin.id),
    };
  }

  async function fromSession(token: string): Promise<Principal | null> {
    const session = await repo.sessionByHash(sha256Hex(token));
    if (!session) return null;
    const now = clock.now();
    if (Date.parse(session.expires_at) <= now) {
      await repo.deleteSession(database.db, session.id);
      return null;
    }
    const admin = await repo.byId(session.admin_id);
    if (!admin || Number(admin.is_active) !== 1) return null;
    if (now - Date.parse(session.last_used_at) >= TOUCH_EVERY_MS)
      await repo.touchSession(session.id, toIso(now), toIso(now + ttlMs));
    return principalFor(admin, {
      kind: "admin",
      id: admin.id,
      appId: null,
      keyScopes: null,
      sessionId: session.id,
    });
  }

  async function fromApiKey(secret: string): Promise<Principal | null> {
    const key = await repo.keyByHash(sha256Hex(secret));
    if (!key) return null;
    const now = clock.now();
    if (key.expires_at && Date.parse(database.dialect.fromTimestamp(key.expires_at)) <= now) return null;
    const admin = await repo.byId(key.admin_id);
    if (!admin || Number(admin.is_active) !== 1) return null;
    const lastUsed = key.last_used_at ? Date.parse(database.dialect.fromTimestamp(key.last_used_at)) : 0;
    if (now - lastUsed >= TOUCH_EVERY_MS) await repo.touchKey(key.id, toIso(now));
    return principalFor(admin, {
      kind: "api_key",
      id: key.id,
      appId: key.app_id,
      keyScopes: new Set(database.dialect.fromJson<Scope[]>(key.scopes)),
      sessionId: null,
    });
  }

  return {
    repo,
    /** Username + password → a new session. 401 invalid_credentials for a wrong pair or an inactive account. */
    async login(username: string, password: string): Promise<LoginResult> {
      const admin = await repo.byUsername(username);
      const ok = await verifyPassword(admin?.password_hash ?? null, password);
      if (!admin || !ok || Number(admin.is_active) !== 1) throw invalidCredentials();
      const token = newToken();
      const now = clock.now();
      const expires_at = toIso(now + ttlMs);
      await database.writeTx(async (trx) => {
        await repo.deleteExpiredSessions(trx, toIso(now));
        const existing = await repo.sessionIdsOf(trx, admin.id);
        for (const id of existing.slice(0, Math.max(0, existing.length - MAX_SESSIONS_PER_ADMIN + 1)))
          await repo.deleteSession(trx, id);
        await repo.insertSession(trx, {
          id: newId(),
          admin_id: admin.id,
          token_hash: sha256Hex(token),
          created_at: toIso(now),
          last_used_at: toIso(now),
          expires_at,
        });
        await repo.update(trx, admin.id, { last_login_at: toIso(now) });
      });
      const fresh = await repo.byId(admin.id);
      return { token, expires_at, admin: repo.toAdmin(fresh ?? admin) };
    },
    async logout(sessionId: string): Promise<void> {
      await repo.deleteSession(database.db, sessionId);
    },
    /** The principal of the first valid credential, or null when none is valid. */
    async authenticate(credentials: readonly string[]): Promise<Principal | null> {
      for (const c of credentials) {
        if (c.length > 512) continue;
        const p = c.startsWith(API_KEY_PREFIX) ? await fromApiKey(c) : await fromSession(c);
        if (p) return p;
      }
      return null;
    },
  };
}
export type Auth = ReturnType<typeof createAuth>;
