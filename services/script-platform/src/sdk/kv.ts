import { limit, name, options, optString } from "./args.js";
import { writeWithEvents } from "./events.js";
import { kvRepo } from "./kv-repository.js";
import type { SdkCall, SdkDeps } from "./types.js";

/** kv.collection(name): JSON values by (app, collection, key); writes emit kv change events. */
export function kvOps(deps: SdkDeps, call: SdkCall) {
  const { database, clock } = deps;
  const repo = kvRepo(database);
  const coll = (op: string, v: unknown) => name(`kv.${op}`, "collection", v, 200);
  const key = (op: string, v: unknown) => name(`kv.${op}`, "key", v, 1024);
  return {
    async get(c: unknown, k: unknown) {
      const json = await repo.value(call.appId, coll("get", c), key("get", k));
      return json === null ? null : JSON.parse(json);
    },
    async has(c: unknown, k: unknown) {
      return repo.has(call.appId, coll("has", c), key("has", k));
    },
    async set(c: unknown, k: unknown, value: unknown) {
      const collection = coll("set", c);
      const kk = key("set", k);
      const v = value === undefined ? null : value;
      const now = clock.iso();
      await writeWithEvents(deps, async (trx, emit) => {
        await repo.upsert(trx, call.appId, collection, kk, JSON.stringify(v), now);
        await emit({
          appId: call.appId,
          kind: "kv",
          collection,
          operation: "set",
          payload: { operation: "set", collection, key: kk, value: v },
          depth: call.depth,
        });
      });
      return null;
    },
    async delete(c: unknown, k: unknown) {
      const collection = coll("delete", c);
      const kk = key("delete", k);
      return writeWithEvents(deps, async (trx, emit) => {
        if (!(await repo.delete(trx, call.appId, collection, kk))) return false;
        await emit({
          appId: call.appId,
          kind: "kv",
          collection,
          operation: "delete",
          payload: { operation: "delete", collection, key: kk },
          depth: call.depth,
        });
        return true;
      });
    },
    async list(c: unknown, opts: unknown) {
      const collection = coll("list", c);
      const o = options("kv.list", opts, ["prefix", "cursor", "limit"] as const);
      const prefix = optString("kv.list", "prefix", o.prefix);
      const cursor = optString("kv.list", "cursor", o.cursor);
      const n = limit("kv.list", o.limit);
      const rows = await repo.list(call.appId, collection, { prefix, after: cursor, limit: n + 1 });
      const page = rows.slice(0, n);
      return {
        items: page.map((r) => ({ key: r.key, value: JSON.parse(r.value) })),
        cursor: rows.length > n ? (page[page.length - 1]?.key ?? null) : null,
      };
    },
  };
}
