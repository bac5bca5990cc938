import type { Clock } from "@app/kit/clock";
import type { Database } from "@app/kit/db";
import type { ProxiedRequest } from "@app/kit/http/proxy";
import type { Logger } from "@app/kit/logger";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Config } from "./config.js";
import type { AppRow } from "./control/apps-repository.js";
import type { RouteTable } from "./control/route-table.js";
import type { SandboxPolicy } from "./control/sandbox-policy.js";
import type { Principal, Scope } from "./control/scopes.js";
import type { ScriptRecord } from "./control/scripts-repository.js";
import type { SecretBox } from "./crypto/secret-box.js";
import type { PlatformDB } from "./db/schema.js";

/**
 * What every script-platform module receives. Built once in app.ts; modules depend on these
 * interfaces, not on each other's internals. The engine's parts (runtime, dispatch, realtime
 * hub, metrics) are not in here: app.ts hands each to the modules that need it.
 */
export interface PlatformContext {
  config: Config;
  clock: Clock;
  logger: Logger;
  database: Database<PlatformDB>;
  paths: {
    dataDir: string;
    /** PLATFORM_FILES_ROOT, default DATA_DIR/files. */
    filesRoot: string;
  };
  /** AES-256-GCM under the master key: secrets, signing keys, inbound email secrets. */
  secretBox: SecretBox;
  /** Live host → app → route resolution for user routes (refreshed on every change, on every node). */
  routeTable: RouteTable;
  /** The admin gate (sessions and API keys). */
  gate: AdminGate;
  /** Lookups other modules need without touching the control tables' SQL. */
  apps: AppLookup;
  scripts: ScriptLookup;
  /** Sandbox ceilings and defaults (env-overridable per knob) and how to resolve a script's limits. */
  sandbox: SandboxPolicy;
  /**
   * The platform's public URL without a trailing slash: PLATFORM_PUBLIC_URL (or its older name
   * PUBLIC_BASE_URL), else the origin the request came to (kit http/proxy: forwarded protocol
   * and host only from hops TRUST_PROXY trusts), else the listen URL once known.
   */
  publicBaseUrl(req?: ProxiedRequest): string;
}

export interface AdminGate {
  /**
   * The caller's principal from a session token (Bearer / X-Auth-Token / `platform_session`
   * cookie) or an API key (Bearer / X-Api-Key). 401 `unauthorized` when absent or invalid;
   * 403 `forbidden` when `scope` is given and not held (on `appId` when given). Cached per request.
   */
  requireAdmin(req: FastifyRequest, scope?: Scope, appId?: string | null): Promise<Principal>;
  /** Like requireAdmin without a scope, but null when the request presents no credential at all. */
  optionalAdmin(req: FastifyRequest): Promise<Principal | null>;
  /** 403 unless `principal` holds `scope` (on `appId` when given). */
  assertScope(principal: Principal, scope: Scope, appId?: string | null): void;
}

export interface AppLookup {
  /** By id, current slug or historic slug; 404 `app_not_found` when unknown. */
  resolve(idOrSlug: string): Promise<AppRow>;
  /** By id only; null when unknown. */
  byId(id: string): Promise<AppRow | null>;
}

export interface ScriptLookup {
  /** By id; null when unknown. */
  byId(id: string): Promise<ScriptRecord | null>;
  /** Many by id in one read (unknown ids are left out). */
  byIds(ids: readonly string[]): Promise<ScriptRecord[]>;
  /** By name within an app; null when unknown. */
  byName(appId: string, name: string): Promise<ScriptRecord | null>;
  /** Every module script an entry may import, transitively: name → source (from the stored graph). */
  modulesFor(script: { id: string }): Promise<Map<string, string>>;
}

/** One line per HTTP module in app.ts: `(app, ctx) => { app.get(...) }`. */
export type RouteModule = (app: FastifyInstance, ctx: PlatformContext) => void | Promise<void>;

/** A route module that also needs parts of the engine (runtime, dispatch…), handed in by app.ts. */
export type RouteModuleWith<D> = (
  app: FastifyInstance,
  ctx: PlatformContext,
  deps: D,
) => void | Promise<void>;

/** Background work (dispatcher, cron, retention…): started after the routes, stopped in reverse order on close. */
export interface Worker {
  name: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}
