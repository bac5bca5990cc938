import type { Database } from "@app/kit/db";
import type { SecretBox } from "../crypto/secret-box.js";
import type { PlatformDB } from "../db/schema.js";
import { fail, name } from "./args.js";
import { secretsRepo } from "./secrets-repository.js";
import type { SdkCall, SdkDeps } from "./types.js";

/** Additional data binding a sealed secret to its app and name (a copied row fails to open). */
const aadOf = (appId: string, secretName: string) => `secret:${appId}:${secretName}`;

/**
 * App secrets: JSON values sealed with AES-256-GCM (ctx.secretBox). Writes emit no trigger
 * events. Shared by the SDK and the admin secrets routes so both use one format.
 */
export function secretsStore(database: Database<PlatformDB>, box: SecretBox, maxBytes: number) {
  const repo = secretsRepo(database);
  return {
    async get(appId: string, secretName: string): Promise<unknown> {
      const sealed = await repo.sealed(appId, secretName);
      return sealed === null ? null : JSON.parse(box.openString(sealed, aadOf(appId, secretName)));
    },
    /** Returns false when the JSON text of the value is over the byte cap. */
    async set(appId: string, secretName: string, value: unknown, now: string): Promise<boolean> {
      const text = JSON.stringify(value === undefined ? null : value);
      if (Buffer.byteLength(text, "utf8") > maxBytes) return false;
      const sealed = box.seal(text, aadOf(appId, secretName));
      await repo.upsert(appId, secretName, sealed, now);
      return true;
    },
    delete: (appId: string, secretName: string): Promise<boolean> => repo.delete(appId, secretName),
    /** Names and updated_at only; values are never listed. */
    async list(appId: string): Promise<{ name: string; updated_at: string }[]> {
      const rows = await repo.names(appId);
      return rows.map((r) => ({ name: r.name, updated_at: database.dialect.fromTimestamp(r.updated_at) }));
    },
  };
}

export function secretsOps(deps: SdkDeps, call: SdkCall) {
  const store = secretsStore(deps.database, deps.secretBox, deps.secretMaxBytes);
  const secretName = (op: string, v: unknown) => name(`secrets.${op}`, "name", v, 200);
  return {
    get: (n: unknown) => store.get(call.appId, secretName("get", n)),
    async set(n: unknown, value: unknown) {
      const ok = await store.set(call.appId, secretName("set", n), value, deps.clock.iso());
      if (!ok) fail("secrets.set", `the value is larger than ${deps.secretMaxBytes} bytes`);
      return null;
    },
    delete: (n: unknown) => store.delete(call.appId, secretName("delete", n)),
    list: () => store.list(call.appId),
  };
}
