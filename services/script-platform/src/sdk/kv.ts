import { limit, name, options, optString } from "./args.js";
import { writeWithEvents } from "./events.js";
import type { SdkCall, SdkDeps } from "./types.js";

/** kv.collection(name): JSON values by (app, collection, key); writes emit kv change events. */
export function kvOps(deps: SdkDeps, call: SdkCall) {
  const { database, clock } = deps;
  const db = database.db;
  const coll = (op: string, v: unknown) => name(`kv.${op}`, "collection", v, 200);
  const key = (op: string, v: unknown) => name(`kv.${op}`, "key", v, 1024);
  const base = (collection: string) =>
    db.selectFrom("kv_entries").where("app_id", "=", call.appId).where("collection", "=", collection);
  return {
    async get(c: unknown, k: unknown) {
      const row = await base(coll("get", c))
        .select("value")
        .where("key", "=", key("get", k))
        .executeTakeFirst();
      return row ? JSON.parse(row.value) : null;
    },
    async has(c: unknown, k: unknown) {
      const row = await base(coll("has", c))
        .select("key")
        .where("key", "=", key("has", k))
        .executeTakeFirst();
      return row !== undefined;
    },
    async set(c: unknown, k: unknown, value: unknown) {
      const collection = coll("set", c);
      const kk = key("set", k);
      const v = value === undefined ? null : value;
      const now = clock.iso();
      await writeWithEvents(deps, async (trx, emit) => {
        await trx
          .insertInto("kv_entries")
          .values({ app_id: call.appId, collection, key: kk, value: JSON.stringify(v), updated_at: now })
          .onConflict((oc) =>
            oc
              .columns(["app_id", "collection", "key"])
              .doUpdateSet({ value: JSON.stringify(v), updated_at: now }),
          )
          .execute();
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
        const r = await trx
          .deleteFrom("kv_entries")
          .where("app_id", "=", call.appId)
          .where("collection", "=", collection)
          .where("key", "=", kk)
          .executeTakeFirst();
        if (Number(r.numDeletedRows) === 0) return false;
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
      let q = base(collection)
        .select(["key", "value"])
        .orderBy("key")
        .limit(n + 1);
      if (prefix)
        q = q.where((eb) => eb(eb.fn("substr", ["key", eb.val(1), eb.val(prefix.length)]), "=", prefix));
      if (cursor) q = q.where("key", ">", cursor);
      const rows = await q.execute();
      const page = rows.slice(0, n);
      return {
        items: page.map((r) => ({ key: r.key, value: JSON.parse(r.value) })),
        cursor: rows.length > n ? (page[page.length - 1]?.key ?? null) : null,
      };
    },
  };
}
