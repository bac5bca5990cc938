import { type Database, type Kysely, sql } from "@app/kit/db";
import { isUuid } from "@app/kit/ids";
import type { PlatformDB } from "../db/schema.js";
import type { AppRole, InstanceRole, Scope } from "./scopes.js";

type Db = Kysely<PlatformDB>;

/** An admin account as the API shows it (never the password hash or the MFA secret). */
export interface AdminView {
  id: string;
  username: string;
  instance_role: InstanceRole;
  is_active: boolean;
  email: string | null;
  created_at: string;
  updated_at: string;
  last_login_at: string | null;
}

export interface ApiKeyView {
  id: string;
  admin_id: string;
  app_id: string | null;
  name: string;
  prefix: string;
  scopes: Scope[];
  created_at: string;
  last_used_at: string | null;
  expires_at: string | null;
}

export interface SessionRow {
  id: string;
  admin_id: string;
  last_used_at: string;
  expires_at: string;
}

/** SQL for admins, sessions, API keys and app members. */
export function adminsRepo(database: Database<PlatformDB>) {
  const d = database.dialect;
  const ts = (v: string | null) => (v === null ? null : d.fromTimestamp(v));
  const toAdmin = (r: PlatformDB["admins"]): AdminView => ({
    id: r.id,
    username: r.username,
    instance_role: r.instance_role as InstanceRole,
    is_active: Number(r.is_active) === 1,
    email: r.email,
    created_at: d.fromTimestamp(r.created_at),
    updated_at: d.fromTimestamp(r.updated_at),
    last_login_at: ts(r.last_login_at),
  });
  const toKey = (r: PlatformDB["api_keys"]): ApiKeyView => ({
    id: r.id,
    admin_id: r.admin_id,
    app_id: r.app_id,
    name: r.name,
    prefix: r.prefix,
    scopes: d.fromJson<Scope[]>(r.scopes),
    created_at: d.fromTimestamp(r.created_at),
    last_used_at: ts(r.last_used_at),
    expires_at: ts(r.expires_at),
  });
  return {
    toAdmin,
    async count(db: Db = database.db): Promise<number> {
      const r = await db
        .selectFrom("admins")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },
    /**
     * Inside a write transaction: hold off other writers of admins until it ends. Two nodes
     * bootstrapping at once on PostgreSQL: the second waits here, then finds an admin. SQLite's
     * write transaction already excludes every other writer.
     */
    async lockAgainstWriters(db: Db): Promise<void> {
      if (database.backend === "postgres")
        await sql`LOCK TABLE admins IN SHARE ROW EXCLUSIVE MODE`.execute(db);
    },
    async byId(id: string, db: Db = database.db): Promise<PlatformDB["admins"] | null> {
      if (!isUuid(id)) return null;
      return (await db.selectFrom("admins").selectAll().where("id", "=", id).executeTakeFirst()) ?? null;
    },
    async byUsername(username: string, db: Db = database.db): Promise<PlatformDB["admins"] | null> {
      return (
        (await db.selectFrom("admins").selectAll().where("username", "=", username).executeTakeFirst()) ??
        null
      );
    },
    async list(opts: { after?: string | null; limit: number }): Promise<AdminView[]> {
      let q = database.db.selectFrom("admins").selectAll().orderBy("id").limit(opts.limit);
      if (opts.after) q = q.where("id", ">", opts.after);
      return (await q.execute()).map(toAdmin);
    },
    async insert(db: Db, row: PlatformDB["admins"]): Promise<void> {
      await db.insertInto("admins").values(row).execute();
    },
    async update(db: Db, id: string, patch: Partial<PlatformDB["admins"]>): Promise<void> {
      await db.updateTable("admins").set(patch).where("id", "=", id).execute();
    },
    async delete(db: Db, id: string): Promise<void> {
      await db.deleteFrom("admins").where("id", "=", id).execute();
    },
    /** Active accounts with instance_role admin, locked on PostgreSQL so the last-admin rule holds under concurrency. */
    async activeInstanceAdmins(db: Db): Promise<string[]> {
      const rows = await d
        .forUpdate(
          db
            .selectFrom("admins")
            .select("id")
            .where("instance_role", "=", "admin")
            .where("is_active", "=", 1),
        )
        .execute();
      return rows.map((r) => r.id);
    },

    // Sessions
    async insertSession(db: Db, row: PlatformDB["admin_sessions"]): Promise<void> {
      await db.insertInto("admin_sessions").values(row).execute();
    },
    async sessionByHash(hash: string): Promise<SessionRow | null> {
      const r = await database.db
        .selectFrom("admin_sessions")
        .select(["id", "admin_id", "last_used_at", "expires_at"])
        .where("token_hash", "=", hash)
        .executeTakeFirst();
      return r
        ? { ...r, last_used_at: d.fromTimestamp(r.last_used_at), expires_at: d.fromTimestamp(r.expires_at) }
        : null;
    },
    async touchSession(id: string, now: string, expiresAt: string): Promise<void> {
      await database.db
        .updateTable("admin_sessions")
        .set({ last_used_at: now, expires_at: expiresAt })
        .where("id", "=", id)
        .execute();
    },
    async deleteSession(db: Db, id: string): Promise<void> {
      await db.deleteFrom("admin_sessions").where("id", "=", id).execute();
    },
    async deleteSessionsOf(db: Db, adminId: string, exceptId?: string | null): Promise<void> {
      let q = db.deleteFrom("admin_sessions").where("admin_id", "=", adminId);
      if (exceptId) q = q.where("id", "!=", exceptId);
      await q.execute();
    },
    async deleteExpiredSessions(db: Db, now: string): Promise<void> {
      await db.deleteFrom("admin_sessions").where("expires_at", "<=", now).execute();
    },
    /** Session ids of an admin, oldest first. */
    async sessionIdsOf(db: Db, adminId: string): Promise<string[]> {
      const rows = await db
        .selectFrom("admin_sessions")
        .select("id")
        .where("admin_id", "=", adminId)
        .orderBy("created_at")
        .orderBy("id")
        .execute();
      return rows.map((r) => r.id);
    },

    // API keys
    toKey,
    async insertKey(db: Db, row: PlatformDB["api_keys"]): Promise<void> {
      await db.insertInto("api_keys").values(row).execute();
    },
    async keyByHash(hash: string): Promise<PlatformDB["api_keys"] | null> {
      return (
        (await database.db
          .selectFrom("api_keys")
          .selectAll()
          .where("secret_hash", "=", hash)
          .executeTakeFirst()) ?? null
      );
    },
    async keyById(id: string): Promise<ApiKeyView | null> {
      if (!isUuid(id)) return null;
      const r = await database.db.selectFrom("api_keys").selectAll().where("id", "=", id).executeTakeFirst();
      return r ? toKey(r) : null;
    },
    async keys(opts: {
      adminId?: string | null;
      after?: string | null;
      limit: number;
    }): Promise<ApiKeyView[]> {
      let q = database.db.selectFrom("api_keys").selectAll().orderBy("id").limit(opts.limit);
      if (opts.adminId) q = q.where("admin_id", "=", opts.adminId);
      if (opts.after) q = q.where("id", ">", opts.after);
      return (await q.execute()).map(toKey);
    },
    async keyCountOf(db: Db, adminId: string): Promise<number> {
      const r = await db
        .selectFrom("api_keys")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("admin_id", "=", adminId)
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },
    async touchKey(id: string, now: string): Promise<void> {
      await database.db.updateTable("api_keys").set({ last_used_at: now }).where("id", "=", id).execute();
    },
    async deleteKey(db: Db, id: string): Promise<boolean> {
      const r = await db.deleteFrom("api_keys").where("id", "=", id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },

    // Members
    async rolesOf(adminId: string): Promise<Map<string, AppRole>> {
      const rows = await database.db
        .selectFrom("app_members")
        .select(["app_id", "role"])
        .where("admin_id", "=", adminId)
        .execute();
      return new Map(rows.map((r) => [r.app_id, r.role as AppRole]));
    },
    async members(
      appId: string,
    ): Promise<{ admin_id: string; username: string; role: AppRole; created_at: string }[]> {
      const rows = await database.db
        .selectFrom("app_members")
        .innerJoin("admins", "admins.id", "app_members.admin_id")
        .select(["app_members.admin_id", "admins.username", "app_members.role", "app_members.created_at"])
        .where("app_members.app_id", "=", appId)
        .orderBy("admins.username")
        .execute();
      return rows.map((r) => ({ ...r, role: r.role as AppRole, created_at: d.fromTimestamp(r.created_at) }));
    },
    async setMember(db: Db, appId: string, adminId: string, role: AppRole, at: string): Promise<void> {
      await db
        .insertInto("app_members")
        .values({ app_id: appId, admin_id: adminId, role, created_at: at })
        .onConflict((oc) => oc.columns(["app_id", "admin_id"]).doUpdateSet({ role }))
        .execute();
    },
    async removeMember(db: Db, appId: string, adminId: string): Promise<boolean> {
      const r = await db
        .deleteFrom("app_members")
        .where("app_id", "=", appId)
        .where("admin_id", "=", adminId)
        .executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
  };
}
export type AdminsRepo = ReturnType<typeof adminsRepo>;
