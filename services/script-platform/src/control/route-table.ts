import type { Clock, TimerHandle } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import type { Logger } from "@app/kit/logger";
import type { PlatformDB } from "../db/schema.js";
import { appsRepo } from "./apps-repository.js";
import {
  type CompiledPattern,
  compile,
  type DispatchMode,
  type HostKind,
  matchesWildcard,
  matchPath,
  methodMatches,
  normalizeHost,
  type PathKind,
  precedenceCompare,
  splitPath,
} from "./route-patterns.js";
import { routesRepo } from "./routes-repository.js";
import { type ScriptRecord, scriptsRepo } from "./scripts-repository.js";

/** A route as the admin API shows it. */
export interface RouteView {
  id: string;
  app_id: string;
  script_id: string;
  host_kind: HostKind;
  host: string | null;
  path_kind: PathKind;
  path: string;
  method: string;
  dispatch_mode: DispatchMode;
  created_at: string;
}

export interface RouteMatch {
  app_id: string;
  script_id: string;
  route: RouteView;
  /** Captured `:name` segments, percent-decoded. */
  params: Record<string, string>;
  /** The part after a prefix route's path, without a leading slash; "" otherwise. */
  rest: string;
  /**
   * The routed script as of the table's last load (reloaded with its app's routes whenever a
   * script is saved or deleted, here and on every node); null when the table does not hold it.
   */
  script: ScriptRecord | null;
}

export interface RouteTable {
  /** Host selects the app (most specific claim), then the app's routes select the script. */
  match(host: string, method: string, path: string): RouteMatch | null;
  /** The app a Host header belongs to: exact claim, else the longest matching wildcard claim. */
  resolveHost(host: string): string | null;
  /** Reload from the database now (this process only): one app's routes and all host claims, or everything. */
  refresh(appId?: string): Promise<void>;
  /**
   * Call after committing a change to an app's domains, scripts or routes (or its deletion):
   * reloads here and on every other node (the table carries the routed scripts, so a saved
   * script must announce itself too). Without an app id everything reloads.
   */
  changed(appId?: string): Promise<void>;
  /** Subscribe to change notifications from other nodes and load the table. */
  start(): Promise<void>;
  stop(): Promise<void>;
}

interface CompiledRoute extends CompiledPattern {
  view: RouteView;
}

interface Bucket {
  exact: Map<string, CompiledRoute[]>;
  /** Param and prefix routes whose first segment is a literal, by that literal, in precedence order. */
  byFirst: Map<string, CompiledRoute[]>;
  /** Param and prefix routes starting with a parameter (or the root prefix), in precedence order. */
  generic: CompiledRoute[];
}

interface AppRoutes {
  /** The scripts the app's routes point at, by id (the live table loads them with the routes). */
  scripts: ReadonlyMap<string, ScriptRecord>;
  strict: Map<string, Bucket>;
  /** Wildcard suffixes, longest first. */
  wildcard: { suffix: string; bucket: Bucket }[];
  any: Bucket;
}

interface Snapshot {
  exactHosts: Map<string, string>;
  wildcardHosts: Map<string, string>;
  apps: Map<string, AppRoutes>;
}

const CHANNEL = "platform_routes_changed";
/** PostgreSQL: full reload this often even without notifications. */
const RESYNC_MS = 60_000;

const emptyBucket = (): Bucket => ({ exact: new Map(), byFirst: new Map(), generic: [] });

function addToBucket(b: Bucket, r: CompiledRoute): void {
  if (r.path_kind === "exact") {
    const list = b.exact.get(r.path) ?? [];
    list.push(r);
    b.exact.set(r.path, list);
    return;
  }
  const first = r.segments[0];
  if (first && "lit" in first) {
    const list = b.byFirst.get(first.lit) ?? [];
    list.push(r);
    b.byFirst.set(first.lit, list);
  } else b.generic.push(r);
}

function sortBucket(b: Bucket): void {
  for (const list of b.byFirst.values()) list.sort(precedenceCompare);
  b.generic.sort(precedenceCompare);
}

function matchBucket(
  b: Bucket,
  method: string,
  path: string,
): { r: CompiledRoute; params: Record<string, string>; rest: string } | null {
  // A method-specific route beats ANY on the same path (they only coexist across HEAD/GET).
  const exact = b.exact.get(path)?.filter((r) => methodMatches(r.method, method));
  if (exact && exact.length > 0) {
    const r = exact.find((x) => x.method === method) ?? (exact[0] as CompiledRoute);
    return { r, params: {}, rest: "" };
  }
  const parts = splitPath(path);
  const a = b.byFirst.get(parts[0] ?? "") ?? [];
  const g = b.generic;
  // Walk both precedence-ordered lists as one.
  let i = 0;
  let j = 0;
  while (i < a.length || j < g.length) {
    const takeA =
      j >= g.length || (i < a.length && precedenceCompare(a[i] as CompiledRoute, g[j] as CompiledRoute) <= 0);
    const r = (takeA ? a[i++] : g[j++]) as CompiledRoute;
    if (!methodMatches(r.method, method)) continue;
    const m = matchPath(r, path, parts);
    if (m) return { r, ...m };
  }
  return null;
}

type DomainClaim = { app_id: string; host: string; kind: string };

function hostMaps(domains: readonly DomainClaim[]): Pick<Snapshot, "exactHosts" | "wildcardHosts"> {
  const exactHosts = new Map<string, string>();
  const wildcardHosts = new Map<string, string>();
  for (const d of domains) {
    if (d.kind === "wildcard") wildcardHosts.set(d.host.slice(2), d.app_id);
    else exactHosts.set(d.host, d.app_id);
  }
  return { exactHosts, wildcardHosts };
}

/** One app's buckets from its routes. */
function buildAppRoutes(
  routes: readonly RouteView[],
  scripts: ReadonlyMap<string, ScriptRecord> = new Map(),
): AppRoutes {
  const app: AppRoutes = { scripts, strict: new Map(), wildcard: [], any: emptyBucket() };
  const sorted = [...routes].sort((a, b) =>
    a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.id < b.id ? -1 : 1,
  );
  for (const view of sorted) {
    const r: CompiledRoute = { ...compile(view), view };
    let bucket: Bucket;
    if (view.host_kind === "strict") {
      bucket = app.strict.get(view.host ?? "") ?? emptyBucket();
      app.strict.set(view.host ?? "", bucket);
    } else if (view.host_kind === "wildcard") {
      const suffix = (view.host ?? "").slice(2);
      let w = app.wildcard.find((x) => x.suffix === suffix);
      if (!w) {
        w = { suffix, bucket: emptyBucket() };
        app.wildcard.push(w);
      }
      bucket = w.bucket;
    } else bucket = app.any;
    addToBucket(bucket, r);
  }
  app.wildcard.sort((a, b) => b.suffix.length - a.suffix.length);
  for (const b of [app.any, ...app.strict.values(), ...app.wildcard.map((w) => w.bucket)]) sortBucket(b);
  return app;
}

function groupByApp(routes: readonly RouteView[]): Map<string, RouteView[]> {
  const byApp = new Map<string, RouteView[]>();
  for (const r of routes) {
    const list = byApp.get(r.app_id) ?? [];
    list.push(r);
    byApp.set(r.app_id, list);
  }
  return byApp;
}

/** Build the lookup structure from rows; pure, so tests can drive it without a database. */
export function buildSnapshot(domains: readonly DomainClaim[], routes: readonly RouteView[]): Snapshot {
  const apps = new Map<string, AppRoutes>();
  for (const [appId, list] of groupByApp(routes)) apps.set(appId, buildAppRoutes(list));
  return { ...hostMaps(domains), apps };
}

export function resolveHostIn(s: Snapshot, rawHost: string): string | null {
  const host = normalizeHost(rawHost);
  const exact = s.exactHosts.get(host);
  if (exact) return exact;
  // Longest suffix first: a.b.example.com tries b.example.com, then example.com, then com.
  let dot = host.indexOf(".");
  while (dot >= 0) {
    const app = s.wildcardHosts.get(host.slice(dot + 1));
    if (app) return app;
    dot = host.indexOf(".", dot + 1);
  }
  return null;
}

export function matchIn(s: Snapshot, rawHost: string, method: string, rawPath: string): RouteMatch | null {
  const appId = resolveHostIn(s, rawHost);
  if (!appId) return null;
  const app = s.apps.get(appId);
  if (!app) return null;
  const host = normalizeHost(rawHost);
  const q = rawPath.indexOf("?");
  const path = q >= 0 ? rawPath.slice(0, q) : rawPath;
  const m = method.toUpperCase();
  const buckets: Bucket[] = [];
  const strict = app.strict.get(host);
  if (strict) buckets.push(strict);
  for (const w of app.wildcard) if (matchesWildcard(host, w.suffix)) buckets.push(w.bucket);
  buckets.push(app.any);
  for (const b of buckets) {
    const hit = matchBucket(b, m, path);
    if (hit)
      return {
        app_id: appId,
        script_id: hit.r.view.script_id,
        route: hit.r.view,
        params: hit.params,
        rest: hit.rest,
        script: app.scripts.get(hit.r.view.script_id) ?? null,
      };
  }
  return null;
}

export function toRouteView(database: Database<PlatformDB>, r: PlatformDB["routes"]): RouteView {
  return {
    id: r.id,
    app_id: r.app_id,
    script_id: r.script_id,
    host_kind: r.host_kind as HostKind,
    host: r.host,
    path_kind: r.path_kind as PathKind,
    path: r.path,
    method: r.method,
    dispatch_mode: r.dispatch_mode as DispatchMode,
    created_at: database.dialect.fromTimestamp(r.created_at),
  };
}

/**
 * The live table: a snapshot swapped atomically on reload. Reloads coalesce (at most one running
 * and one queued); on PostgreSQL, other nodes hear about changes via LISTEN/NOTIFY.
 */
/**
 * The live table: a snapshot swapped atomically on reload. A change reloads the host claims and
 * only the changed app's routes. Reloads run one at a time; requests made while one is queued
 * join it, and each caller's promise settles after a load that started after its call. On
 * PostgreSQL, other nodes hear about changes via LISTEN/NOTIFY (payload: the app id).
 */
export function createRouteTable(database: Database<PlatformDB>, logger: Logger, clock: Clock): RouteTable {
  let resync: TimerHandle | null = null;
  let snapshot: Snapshot = buildSnapshot([], []);
  let unsubscribe: (() => Promise<void>) | null = null;
  let pending = { full: false, apps: new Set<string>() };
  let scheduled: Promise<void> | null = null;
  let chain: Promise<void> = Promise.resolve();
  const apps = appsRepo(database);
  const routes = routesRepo(database);
  const scripts = scriptsRepo(database);

  const load = async (work: { full: boolean; apps: Set<string> }) => {
    const appIds = [...work.apps];
    const [domains, rows] = await Promise.all([apps.allDomains(), routes.forApps(work.full ? null : appIds)]);
    // The routed scripts are read after their routes: a script saved meanwhile announces itself
    // with another change, which reloads its app again.
    const byId = new Map((await scripts.byIds(rows.map((r) => r.script_id))).map((s) => [s.id, s]));
    const byApp = groupByApp(rows.map((r) => toRouteView(database, r)));
    const live = work.full ? new Map<string, AppRoutes>() : new Map(snapshot.apps);
    if (!work.full) for (const id of appIds) live.delete(id);
    for (const [id, list] of byApp) {
      const own = new Map<string, ScriptRecord>();
      for (const r of list) {
        const s = byId.get(r.script_id);
        if (s?.app_id === id) own.set(s.id, s);
      }
      live.set(id, buildAppRoutes(list, own));
    }
    snapshot = { ...hostMaps(domains), apps: live };
  };

  const refresh = (appId?: string): Promise<void> => {
    if (appId) pending.apps.add(appId);
    else pending.full = true;
    if (!scheduled) {
      const job = chain.then(async () => {
        scheduled = null;
        const work = pending;
        pending = { full: false, apps: new Set() };
        await load(work);
      });
      scheduled = job;
      chain = job.catch(() => {});
    }
    return scheduled;
  };

  return {
    match: (host, method, path) => matchIn(snapshot, host, method, path),
    resolveHost: (host) => resolveHostIn(snapshot, host),
    refresh,
    async changed(appId) {
      await refresh(appId);
      if (database.dialect.sharedByProcesses) {
        await database.notifier
          .publish(CHANNEL, appId ?? "")
          .catch((err) => logger.warn({ err }, "route change notify failed"));
      }
    },
    async start() {
      if (database.dialect.sharedByProcesses) {
        const reload = (appId?: string) =>
          refresh(appId).catch((err) => logger.error({ err }, "route table reload failed"));
        unsubscribe = await database.notifier.subscribe(
          CHANNEL,
          (payload) => void reload(payload || undefined),
        );
        // Safety net: a notification lost while the LISTEN connection reconnects is healed here.
        resync = clock.setInterval(() => void reload(), RESYNC_MS);
      }
      await refresh();
    },
    async stop() {
      resync?.cancel();
      resync = null;
      await unsubscribe?.();
      unsubscribe = null;
      await chain;
    },
  };
}
