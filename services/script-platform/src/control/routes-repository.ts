import type { Database, Kysely } from "@app/kit/db";
import type { PlatformDB } from "../db/schema.js";

type Db = Kysely<PlatformDB>;

/** A stored route as the table holds it (timestamps as the backend returns them). */
export type RouteRow = PlatformDB["routes"];

/** SQL for the routes table. */
export function routesRepo(database: Database<PlatformDB>) {
  return {
    /** One app's routes, oldest first (the order conflicts are reported in). */
    async inApp(db: Db, appId: string): Promise<RouteRow[]> {
      return db.selectFrom("routes").selectAll().where("app_id", "=", appId).orderBy("created_at").execute();
    },
    async forScript(scriptId: string): Promise<RouteRow[]> {
      return database.db
        .selectFrom("routes")
        .selectAll()
        .where("script_id", "=", scriptId)
        .orderBy("created_at")
        .orderBy("id")
        .execute();
    },
    /** Every route (`appIds` null) or those of the given apps, for loading the live table. */
    async forApps(appIds: readonly string[] | null): Promise<RouteRow[]> {
      if (appIds === null) return database.db.selectFrom("routes").selectAll().execute();
      if (appIds.length === 0) return [];
      return database.db
        .selectFrom("routes")
        .selectAll()
        .where("app_id", "in", [...appIds])
        .execute();
    },
    async byId(id: string, db: Db = database.db): Promise<RouteRow | null> {
      return (await db.selectFrom("routes").selectAll().where("id", "=", id).executeTakeFirst()) ?? null;
    },
    async countInApp(db: Db, appId: string): Promise<number> {
      const r = await db
        .selectFrom("routes")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("app_id", "=", appId)
        .executeTakeFirst();
      return Number(r?.n ?? 0);
    },
    async insert(db: Db, row: RouteRow): Promise<void> {
      await db.insertInto("routes").values(row).execute();
    },
    async delete(db: Db, id: string): Promise<boolean> {
      const r = await db.deleteFrom("routes").where("id", "=", id).executeTakeFirst();
      return Number(r.numDeletedRows) > 0;
    },
  };
}
export type RoutesRepo = ReturnType<typeof routesRepo>;
