import type { Clock } from "@app/kit/clock";
import { toIso } from "@app/kit/clock";
import type { Database, Kysely } from "@app/kit/db";
import { AppError, conflict, forbidden, notFound } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import { newToken, sha256Hex } from "../crypto/tokens.js";
import type { PlatformDB } from "../db/schema.js";
import { type AdminsRepo, type AdminView, type ApiKeyView, adminsRepo } from "./admins-repository.js";
import { API_KEY_PREFIX } from "./auth.js";
import { hashPassword } from "./passwords.js";
import { type AppRole, hasScope, type InstanceRole, type Principal, type Scope } from "./scopes.js";

/** API keys per admin account (bound: refuse beyond it). */
export const MAX_API_KEYS_PER_ADMIN = 100;

export const USERNAME_RE = /^[A-Za-z0-9_.@-]{1,64}$/;

export const adminNotFound = () => notFound("No such admin account.", "admin_not_found");

const lastAdmin = () =>
  conflict(
    "last_admin",
    "This is the last active admin account; it cannot be deleted, deactivated or demoted.",
  );

type Db = Kysely<PlatformDB>;

/** Admin accounts (the last-admin rule), API keys and app members. */
export function createAdmins(deps: { database: Database<PlatformDB>; clock: Clock }) {
  const { database, clock } = deps;
  const repo: AdminsRepo = adminsRepo(database);

  /** Would removing `id` from the active instance admins leave none? (locks the rows on PostgreSQL) */
  async function guardLastAdmin(trx: Db, id: string): Promise<void> {
    const active = await repo.activeInstanceAdmins(trx);
    if (active.length === 1 && active[0] === id) throw lastAdmin();
  }

  return {
    repo,

    async create(input: {
      username: string;
      password: string;
      instance_role?: InstanceRole | undefined;
      email?: string | null | undefined;
      is_active?: boolean | undefined;
    }): Promise<AdminView> {
      const now = clock.iso();
      const row = {
        id: newId(),
        username: input.username,
        password_hash: await hashPassword(input.password),
        instance_role: input.instance_role ?? "admin",
        is_active: input.is_active === false ? 0 : 1,
        email: input.email ?? null,
        mfa_secret: null,
        created_at: now,
        updated_at: now,
        last_login_at: null,
      };
      try {
        await database.writeTx((trx) => repo.insert(trx, row));
      } catch (err) {
        if (database.dialect.isUniqueViolation(err))
          throw conflict("username_taken", `The username ${input.username} is taken.`, { field: "username" });
        throw err;
      }
      return repo.toAdmin(row);
    },

    async get(id: string): Promise<AdminView> {
      const row = await repo.byId(id);
      if (!row) throw adminNotFound();
      return repo.toAdmin(row);
    },

    /**
     * PATCH: is_active false wipes the account's sessions; a new password ends every other
     * session of the account (the caller's own, `keepSessionId`, survives).
     */
    async update(
      id: string,
      input: {
        password?: string | undefined;
        is_active?: boolean | undefined;
        instance_role?: InstanceRole | undefined;
        email?: string | null | undefined;
        username?: string | undefined;
      },
      keepSessionId: string | null,
    ): Promise<AdminView> {
      const hash = input.password !== undefined ? await hashPassword(input.password) : undefined;
      try {
        await database.writeTx(async (trx) => {
          const row = await repo.byId(id, trx);
          if (!row) throw adminNotFound();
          const demoted = input.instance_role !== undefined && input.instance_role !== "admin";
          const deactivated = input.is_active === false;
          if ((demoted || deactivated) && row.instance_role === "admin" && Number(row.is_active) === 1)
            await guardLastAdmin(trx, id);
          const patch: Partial<PlatformDB["admins"]> = { updated_at: clock.iso() };
          if (hash !== undefined) patch.password_hash = hash;
          if (input.is_active !== undefined) patch.is_active = input.is_active ? 1 : 0;
          if (input.instance_role !== undefined) patch.instance_role = input.instance_role;
          if (input.email !== undefined) patch.email = input.email;
          if (input.username !== undefined) patch.username = input.username;
          await repo.update(trx, id, patch);
          if (deactivated) await repo.deleteSessionsOf(trx, id);
          else if (hash !== undefined) await repo.deleteSessionsOf(trx, id, keepSessionId);
        });
      } catch (err) {
        if (database.dialect.isUniqueViolation(err))
          throw conflict("username_taken", `The username ${input.username} is taken.`, { field: "username" });
        throw err;
      }
      return this.get(id);
    },

    async remove(id: string): Promise<void> {
      await database.writeTx(async (trx) => {
        const row = await repo.byId(id, trx);
        if (!row) throw adminNotFound();
        if (row.instance_role === "admin" && Number(row.is_active) === 1) await guardLastAdmin(trx, id);
        await repo.delete(trx, id);
      });
    },

    /** Recovery without HTTP (CLI): set a password, end every session of the account. */
    async resetPassword(username: string, password: string): Promise<AdminView> {
      const hash = await hashPassword(password);
      const id = await database.writeTx(async (trx) => {
        const row = await repo.byUsername(username, trx);
        if (!row) throw adminNotFound();
        await repo.update(trx, row.id, { password_hash: hash, updated_at: clock.iso() });
        await repo.deleteSessionsOf(trx, row.id);
        return row.id;
      });
      return this.get(id);
    },

    /**
     * A new API key for the caller's account. The key may only carry scopes the caller holds
     * (on `app_id` when given). The secret is returned once.
     */
    async createKey(
      principal: Principal,
      input: {
        name: string;
        scopes: Scope[];
        app_id?: string | null | undefined;
        expires_in_days?: number | undefined;
      },
    ): Promise<ApiKeyView & { secret: string }> {
      const appId = input.app_id ?? principal.appId ?? null;
      for (const s of input.scopes)
        if (!hasScope(principal, s, appId))
          throw forbidden(`You cannot grant the ${s} scope${appId ? " on this app" : ""}.`);
      if (input.scopes.length === 0)
        throw new AppError(422, "validation_failed", "scopes needs at least one scope.", { field: "scopes" });
      const secret = newToken(API_KEY_PREFIX);
      const now = clock.now();
      const row = {
        id: newId(),
        admin_id: principal.adminId,
        app_id: appId,
        name: input.name,
        prefix: secret.slice(0, API_KEY_PREFIX.length + 6),
        secret_hash: sha256Hex(secret),
        scopes: database.dialect.json([...new Set(input.scopes)]),
        created_at: toIso(now),
        last_used_at: null,
        expires_at: input.expires_in_days ? toIso(now + input.expires_in_days * 86_400_000) : null,
      };
      await database.writeTx(async (trx) => {
        if ((await repo.keyCountOf(trx, principal.adminId)) >= MAX_API_KEYS_PER_ADMIN)
          throw conflict(
            "too_many_keys",
            `An account may hold at most ${MAX_API_KEYS_PER_ADMIN} API keys; delete one first.`,
          );
        await repo.insertKey(trx, row);
      });
      return { ...repo.toKey(row), scopes: [...new Set(input.scopes)], secret };
    },

    /** Keys visible to the caller: all with admin:read, else their own. */
    listKeys(principal: Principal, opts: { after?: string | null; limit: number }): Promise<ApiKeyView[]> {
      const all = hasScope(principal, "admin:read");
      return repo.keys({ ...opts, adminId: all ? null : principal.adminId });
    },

    async deleteKey(principal: Principal, id: string): Promise<void> {
      const key = await repo.keyById(id);
      if (!key || (key.admin_id !== principal.adminId && !hasScope(principal, "admin:write")))
        throw notFound("No such API key.", "api_key_not_found");
      await database.writeTx((trx) => repo.deleteKey(trx, id));
    },

    async setMember(appId: string, adminId: string, role: AppRole): Promise<void> {
      if (!(await repo.byId(adminId))) throw adminNotFound();
      await database.writeTx((trx) => repo.setMember(trx, appId, adminId, role, clock.iso()));
    },

    async removeMember(appId: string, adminId: string): Promise<void> {
      const removed = await database.writeTx((trx) => repo.removeMember(trx, appId, adminId));
      if (!removed) throw notFound("That account is not a member of this app.", "member_not_found");
    },
  };
}
export type Admins = ReturnType<typeof createAdmins>;
