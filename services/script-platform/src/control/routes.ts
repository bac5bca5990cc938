import type { Clock } from "@app/kit/clock";
import type { Database, Kysely } from "@app/kit/db";
import { AppError, conflict, notFound } from "@app/kit/errors";
import { newId } from "@app/kit/ids";
import type { PlatformDB } from "../db/schema.js";
import { appsRepo } from "./apps-repository.js";
import {
  compile,
  conflicts,
  type DispatchMode,
  type HostKind,
  parseHost,
  parseMethod,
  parsePath,
  type RoutePattern,
} from "./route-patterns.js";
import { type RouteTable, type RouteView, toRouteView } from "./route-table.js";
import { routesRepo } from "./routes-repository.js";
import { scriptsRepo } from "./scripts-repository.js";

export interface RouteInput {
  host_kind?: HostKind | undefined;
  host?: string | null | undefined;
  path: string;
  method?: string | undefined;
  dispatch_mode?: DispatchMode | undefined;
}

export interface RoutesDeps {
  database: Database<PlatformDB>;
  clock: Clock;
  routeTable: RouteTable;
}

export const routeNotFound = () => notFound("No such route.", "route_not_found");

/** Routes per app (the live table holds them all in memory). */
export const MAX_ROUTES_PER_APP = 10_000;

type Db = Kysely<PlatformDB>;

/** Validate a route body into its stored pattern (422 on invalid or reserved patterns). */
export function normalizeRoute(input: RouteInput): RoutePattern & { dispatch_mode: DispatchMode } {
  const host_kind = input.host_kind ?? "any";
  const host = parseHost(host_kind, input.host);
  const { path_kind, path } = parsePath(input.path);
  return {
    host_kind,
    host,
    path_kind,
    path,
    method: parseMethod(input.method),
    dispatch_mode: input.dispatch_mode ?? "sync",
  };
}

/** Routes: validation, conflicts (409 with the conflicting route), and keeping the live table current. */
export function createRoutes(deps: RoutesDeps) {
  const { database, clock, routeTable } = deps;
  const scripts = scriptsRepo(database);
  const apps = appsRepo(database);
  const repo = routesRepo(database);

  /**
   * A strict-host route on a host that another app claims could never match (the Host header
   * selects that app first): refuse it with the reason instead of storing a dead route.
   */
  function refuseForeignHost(appId: string, pattern: RoutePattern): void {
    if (pattern.host_kind !== "strict" || !pattern.host) return;
    const owner = routeTable.resolveHost(pattern.host);
    if (owner && owner !== appId)
      throw new AppError(
        422,
        "host_claimed_by_other_app",
        `The host ${pattern.host} is claimed by another app, so requests to it never reach this app's routes; claim a host of this app or use host_kind "any".`,
        { field: "host" },
      );
  }

  async function findConflict(db: Db, appId: string, pattern: RoutePattern): Promise<RouteView | null> {
    const rows = await repo.inApp(db, appId);
    const mine = compile(pattern);
    for (const r of rows) {
      const v = toRouteView(database, r);
      if (conflicts(mine, compile(v))) return v;
    }
    return null;
  }

  const conflictError = (route: RouteView) =>
    conflict(
      "route_conflict",
      `This route conflicts with route ${route.id} (${route.method} ${route.path}).`,
      {
        conflict: route,
      },
    );

  return {
    async listForScript(scriptId: string): Promise<RouteView[]> {
      const rows = await repo.forScript(scriptId);
      return rows.map((r) => toRouteView(database, r));
    },

    async byId(id: string): Promise<RouteView | null> {
      const r = await repo.byId(id);
      return r ? toRouteView(database, r) : null;
    },

    /** Pre-flight: the normalised route and the route it would conflict with, if any. */
    async check(
      appId: string,
      input: RouteInput,
    ): Promise<{ route: RoutePattern & { dispatch_mode: DispatchMode }; conflict: RouteView | null }> {
      const route = normalizeRoute(input);
      return { route, conflict: await findConflict(database.db, appId, route) };
    },

    async create(scriptId: string, input: RouteInput): Promise<RouteView> {
      const pattern = normalizeRoute(input);
      const view = await database.writeTx(async (trx) => {
        const script = await scripts.byId(scriptId, trx);
        if (!script) throw notFound("No such script.", "script_not_found");
        if (script.kind !== "endpoint")
          throw new AppError(
            422,
            "invalid_target",
            "Routes can only point at endpoint scripts, not modules.",
            {
              field: "script_id",
            },
          );
        // Serialise route changes per app so two concurrent creates cannot both pass the check.
        await apps.lock(trx, script.app_id);
        if ((await repo.countInApp(trx, script.app_id)) >= MAX_ROUTES_PER_APP)
          throw conflict("limit_reached", `An app may have at most ${MAX_ROUTES_PER_APP} routes.`, {
            limit: MAX_ROUTES_PER_APP,
          });
        refuseForeignHost(script.app_id, pattern);
        const clash = await findConflict(trx, script.app_id, pattern);
        if (clash) throw conflictError(clash);
        const row = {
          id: newId(),
          app_id: script.app_id,
          script_id: script.id,
          host_kind: pattern.host_kind,
          host: pattern.host,
          path_kind: pattern.path_kind,
          path: pattern.path,
          method: pattern.method,
          dispatch_mode: pattern.dispatch_mode,
          created_at: clock.iso(),
        };
        await repo.insert(trx, row);
        return toRouteView(database, row);
      });
      await routeTable.changed(view.app_id);
      return view;
    },

    async remove(routeId: string): Promise<RouteView> {
      const removed = await database.writeTx(async (trx) => {
        const r = await repo.byId(routeId, trx);
        if (!r) throw routeNotFound();
        await repo.delete(trx, routeId);
        return toRouteView(database, r);
      });
      await routeTable.changed(removed.app_id);
      return removed;
    },
  };
}
export type Routes = ReturnType<typeof createRoutes>;
