import type { Database, Kysely } from "@app/kit/db";
import { isUuid } from "@app/kit/ids";
import type { PlatformDB } from "../db/schema.js";

export interface AppRow {
  id: string;
  slug: string;
  name: string;
  description: string;
  created_at: string;
  updated_at: string;
}

export interface DomainRow {
  id: string;
  app_id: string;
  host: string;
  kind: "exact" | "wildcard";
  created_at: string;
}

type Db = Kysely<PlatformDB>;

/**
 * The data tables of 0002/0003 carry app_id without a foreign key; deleting an app purges them
 * (`deleteAppData`). Executions, abandoned executions and dead letters are forensic records the
 * retention jobs remove on their own schedule.
 */
const APP_DATA_TABLES = [
  "kv_entries",
  "docs",
  "files",
  "secrets",
  "topics",
  "app_signing_keys",
  "outbox",
  "triggers",
  "realtime_messages",
] as const;

const APP_COLUMNS = ["id", "slug", "name", "description", "created_at", "updated_at"] as const;

function toApp(database: Database<PlatformDB>, r: AppRow): AppRow {
  return {
    ...r,
    created_at: database.dialect.fromTimestamp(r.created_at),
    updated_at: database.dialect.fromTimestamp(r.updated_at),
  };
}

/** SQL for apps, slug history and domain claims. */
export function appsRepo(database: Database<PlatformDB>) {
  const d = database.dialect;
  const app = (r: AppRow | undefined) => (r ? toApp(database, r) : null);
  return {
    async byId(id: string, db: Db = database.db): Promise<AppRow | null> {
      if (!isUuid(id)) return null;
      return app(await db.selectFrom("apps").select(APP_COLUMNS).where("id", "=", id).executeTakeFirst());
    },
    async bySlug(slug: string, db: Db = database.db): Promise<AppRow | null> {
      return app(await db.selectFrom("apps").select(APP_COLUMNS).where("slug", "=", slug).executeTakeFirst());
    },
    /** The app that once used `slug` (slug history), if any. */
    async historyOwner(slug: string, db: Db = database.db): Promise<string | null> {
      const r = await db
        .selectFrom("app_slug_history")
        .select("app_id")
        .where("slug", "=", slug)
        .executeTakeFirst();
      return r?.app_id ?? null;
    },
    async list(opts: {
      after?: string | null;
      limit: number;
      only?: ReadonlySet<string> | null;
    }): Promise<AppRow[]> {
      let q = database.db.selectFrom("apps").select(APP_COLUMNS).orderBy("id").limit(opts.limit);
      if (opts.after) q = q.where("id", ">", opts.after);
      if (opts.only) {
        if (opts.only.size === 0) return [];
        q = q.where("id", "in", [...opts.only]);
      }
      return (await q.execute()).map((r) => toApp(database, r));
    },
    async insert(db: Db, row: AppRow): Promise<void> {
      await db.insertInto("apps").values(row).execute();
    },
    async update(db: Db, id: string, patch: Partial<Omit<AppRow, "id" | "created_at">>): Promise<void> {
      await db.updateTable("apps").set(patch).where("id", "=", id).execute();
    },
    async delete(db: Db, id: string): Promise<boolean> {
      const r = await db.deleteFrom("apps").where("id", "=", id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
    /** Every row of the app in the tables without a foreign key to apps (before `delete`). */
    async deleteAppData(db: Db, id: string): Promise<void> {
      for (const table of APP_DATA_TABLES) await db.deleteFrom(table).where("app_id", "=", id).execute();
    },
    async addHistory(db: Db, slug: string, appId: string, at: string): Promise<void> {
      await db
        .insertInto("app_slug_history")
        .values({ slug, app_id: appId, retired_at: at })
        .onConflict((oc) => oc.column("slug").doUpdateSet({ app_id: appId, retired_at: at }))
        .execute();
    },
    async removeHistory(db: Db, slug: string): Promise<void> {
      await db.deleteFrom("app_slug_history").where("slug", "=", slug).execute();
    },
    async historyOf(appId: string): Promise<string[]> {
      const rows = await database.db
        .selectFrom("app_slug_history")
        .select("slug")
        .where("app_id", "=", appId)
        .orderBy("retired_at")
        .execute();
      return rows.map((r) => r.slug);
    },
    /** Serialise changes to one app's routes/domains on PostgreSQL (SQLite: the write lock). */
    async lock(db: Db, id: string): Promise<boolean> {
      const r = await d.forUpdate(db.selectFrom("apps").select("id").where("id", "=", id)).executeTakeFirst();
      return r !== undefined;
    },
    async domains(appId: string): Promise<DomainRow[]> {
      const rows = await database.db
        .selectFrom("app_domains")
        .selectAll()
        .where("app_id", "=", appId)
        .orderBy("host")
        .execute();
      return rows.map((r) => ({
        ...r,
        kind: r.kind as DomainRow["kind"],
        created_at: d.fromTimestamp(r.created_at),
      }));
    },
    async allDomains(db: Db = database.db): Promise<DomainRow[]> {
      const rows = await db.selectFrom("app_domains").selectAll().execute();
      return rows.map((r) => ({
        ...r,
        kind: r.kind as DomainRow["kind"],
        created_at: d.fromTimestamp(r.created_at),
      }));
    },
    async domainCount(db: Db, appId: string): Promise<number> {
      const r = await db
        .selectFrom("app_domains")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("app_id", "=", appId)
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },
    async domainByHost(db: Db, host: string): Promise<DomainRow | null> {
      const r = await db.selectFrom("app_domains").selectAll().where("host", "=", host).executeTakeFirst();
      return r
        ? { ...r, kind: r.kind as DomainRow["kind"], created_at: d.fromTimestamp(r.created_at) }
        : null;
    },
    async insertDomain(db: Db, row: DomainRow): Promise<void> {
      await db.insertInto("app_domains").values(row).execute();
    },
    async deleteDomain(db: Db, appId: string, idOrHost: string): Promise<boolean> {
      const r = await db
        .deleteFrom("app_domains")
        .where("app_id", "=", appId)
        .where((eb) => eb.or([eb("id", "=", idOrHost), eb("host", "=", idOrHost.toLowerCase())]))
        .executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
  };
}
export type AppsRepo = ReturnType<typeof appsRepo>;
