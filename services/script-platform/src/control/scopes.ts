/**
 * The seven scopes, the per-app roles and the instance roles, and how they combine into what a
 * principal may do. Decisions (documented in the service README section):
 * - Scopes: `app:read`, `script:read`, `script:write`, `app:admin` are per app; `admin:read`,
 *   `admin:write`, `instance:admin` are instance-wide.
 * - Instance roles: `admin` holds all seven scopes on every app; `member` holds no instance scope
 *   and only what its app memberships grant.
 * - App roles: viewer ⊂ editor ⊂ admin ⊂ owner (owner additionally manages members and deletes
 *   the app).
 * - An API key carries a scope list (and optionally one app); it can never do more than its
 *   owning admin can do right now.
 */
export const APP_SCOPES = ["app:read", "script:read", "script:write", "app:admin"] as const;
export const INSTANCE_SCOPES = ["admin:read", "admin:write", "instance:admin"] as const;
export const SCOPES = [...APP_SCOPES, ...INSTANCE_SCOPES] as const;
export type AppScope = (typeof APP_SCOPES)[number];
export type InstanceScope = (typeof INSTANCE_SCOPES)[number];
export type Scope = (typeof SCOPES)[number];

export const INSTANCE_ROLES = ["admin", "member"] as const;
export type InstanceRole = (typeof INSTANCE_ROLES)[number];

export const APP_ROLES = ["owner", "admin", "editor", "viewer"] as const;
export type AppRole = (typeof APP_ROLES)[number];

/** Scopes each app role grants on its app. */
export const ROLE_SCOPES: Record<AppRole, readonly AppScope[]> = {
  viewer: ["app:read", "script:read"],
  editor: ["app:read", "script:read", "script:write"],
  admin: ["app:read", "script:read", "script:write", "app:admin"],
  owner: ["app:read", "script:read", "script:write", "app:admin"],
};

/**
 * What each script capability needs (seed: "Capabilities map onto a fixed set of seven scopes").
 * The runtime's SDK and the triggers check these names.
 */
export const CAPABILITY_SCOPES = {
  "kv.read": "script:read",
  "docs.read": "script:read",
  "files.read": "script:read",
  "kv.write": "script:write",
  "docs.write": "script:write",
  "files.write": "script:write",
  "pubsub.publish": "script:write",
  http: "script:write",
  secrets: "script:write",
  "triggers.manage": "app:admin",
  "topics.manage": "app:admin",
  "dead_letters.manage": "app:admin",
} as const satisfies Record<string, Scope>;
export type Capability = keyof typeof CAPABILITY_SCOPES;

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

/** Who is calling: an admin session or an API key, with everything needed to decide access. */
export interface Principal {
  kind: "admin" | "api_key";
  /** The admin id (kind admin) or the API key id (kind api_key). */
  id: string;
  /** The admin account acting (the key's owner for an API key). */
  adminId: string;
  username: string;
  instanceRole: InstanceRole;
  /** Instance-wide scopes: held on every app (instance admins hold all seven). */
  scopes: ReadonlySet<Scope>;
  /** Per-app roles from app_members. */
  appRoles: ReadonlyMap<string, AppRole>;
  /** An API key limited to one app; null otherwise. */
  appId: string | null;
  /** API keys: the key's own scope list (intersected with the owner's). Null for sessions. */
  keyScopes: ReadonlySet<Scope> | null;
  /** The session id when authenticated by a session token (logout needs it). */
  sessionId: string | null;
}

/** Whether `p` holds `scope`, on `appId` when given (an app scope without an app means "on any app it can see"). */
export function hasScope(p: Principal, scope: Scope, appId?: string | null): boolean {
  if (p.keyScopes && !p.keyScopes.has(scope)) return false;
  if (appId && p.appId && p.appId !== appId) return false;
  if (p.appId && (INSTANCE_SCOPES as readonly string[]).includes(scope)) return false;
  if (p.scopes.has(scope)) return true;
  if (!(APP_SCOPES as readonly string[]).includes(scope)) return false;
  if (appId) {
    const role = p.appRoles.get(appId);
    return role !== undefined && ROLE_SCOPES[role].includes(scope as AppScope);
  }
  for (const role of p.appRoles.values()) if (ROLE_SCOPES[role].includes(scope as AppScope)) return true;
  return false;
}

/** App ids on which the principal holds `scope` (null = every app). */
export function appsWithScope(p: Principal, scope: AppScope): ReadonlySet<string> | null {
  if (p.keyScopes && !p.keyScopes.has(scope)) return new Set();
  if (p.appId) return hasScope(p, scope, p.appId) ? new Set([p.appId]) : new Set();
  if (p.scopes.has(scope)) return null;
  return new Set([...p.appRoles].filter(([, role]) => ROLE_SCOPES[role].includes(scope)).map(([id]) => id));
}

/** App ids the principal may see (app:read; null = every app). */
export function visibleApps(p: Principal): ReadonlySet<string> | null {
  return appsWithScope(p, "app:read");
}

/** Whether the principal may perform a script capability on an app (the SDK's check). */
export function can(p: Principal, capability: Capability, appId: string): boolean {
  return hasScope(p, CAPABILITY_SCOPES[capability], appId);
}

/** Whether the principal manages members or deletes `appId` (app owner or instance admin). */
export function isAppOwner(p: Principal, appId: string): boolean {
  if (!hasScope(p, "app:admin", appId)) return false;
  return hasScope(p, "instance:admin") || p.appRoles.get(appId) === "owner";
}
