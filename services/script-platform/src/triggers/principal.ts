import type { AppRole, InstanceRole, Principal, Scope } from "../control/scopes.js";

/**
 * The JSON form of a principal, as stored in triggers.registered_by_principal and copied into
 * each outbox row's `principal` column: the dispatcher rebuilds the Principal with
 * principalFromJson and the SDK checks capabilities against it. Sessions are not carried over.
 */
export interface PrincipalJson {
  kind: "admin" | "api_key";
  id: string;
  admin_id: string;
  username: string;
  instance_role: InstanceRole;
  scopes: Scope[];
  app_roles: Record<string, AppRole>;
  app_id: string | null;
  key_scopes: Scope[] | null;
}

export function principalToJson(p: Principal): PrincipalJson {
  return {
    kind: p.kind,
    id: p.id,
    admin_id: p.adminId,
    username: p.username,
    instance_role: p.instanceRole,
    scopes: [...p.scopes],
    app_roles: Object.fromEntries(p.appRoles),
    app_id: p.appId,
    key_scopes: p.keyScopes ? [...p.keyScopes] : null,
  };
}

export function principalFromJson(j: PrincipalJson): Principal {
  return {
    kind: j.kind,
    id: j.id,
    adminId: j.admin_id,
    username: j.username,
    instanceRole: j.instance_role,
    scopes: new Set(j.scopes),
    appRoles: new Map(Object.entries(j.app_roles)),
    appId: j.app_id,
    keyScopes: j.key_scopes ? new Set(j.key_scopes) : null,
    sessionId: null,
  };
}
