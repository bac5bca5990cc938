import { newId } from "@app/kit/ids";
import { defineOwn, fail, isPlainObject, limit, name, options, optString } from "./args.js";
import { type DocRow, docsRepo } from "./docs-repository.js";
import { type Emit, writeWithEvents } from "./events.js";
import type { SdkCall, SdkDeps } from "./types.js";

/** RFC 7386 JSON merge patch; builds new objects and never assigns through a prototype setter. */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return patch;
  const out: Record<string, unknown> = {};
  if (isPlainObject(target)) for (const [k, v] of Object.entries(target)) defineOwn(out, k, v);
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else defineOwn(out, k, mergePatch(Object.hasOwn(out, k) ? out[k] : undefined, v));
  }
  return out;
}

/** docs.collection(name): JSON object bodies by id; events carry prev_data. */
export function docsOps(deps: SdkDeps, call: SdkCall) {
  const { database, clock } = deps;
  const d = database.dialect;
  const repo = docsRepo(database);
  const coll = (op: string, v: unknown) => name(`docs.${op}`, "collection", v, 200);
  const docId = (op: string, v: unknown) => name(`docs.${op}`, "id", v, 200);
  const body = (op: string, v: unknown) => {
    if (v === undefined || v === null) fail(`docs.${op}`, "missing required field: body");
    if (!isPlainObject(v)) fail(`docs.${op}`, "body must be an object");
    return v;
  };
  const view = (r: DocRow) => ({
    id: r.id,
    data: JSON.parse(r.body) as unknown,
    created_at: d.fromTimestamp(r.created_at),
    updated_at: d.fromTimestamp(r.updated_at),
  });
  const event = (
    emit: Emit,
    collection: string,
    operation: "create" | "update" | "delete",
    payload: Record<string, unknown>,
  ) =>
    emit({
      appId: call.appId,
      kind: "docs",
      collection,
      operation,
      payload: { operation, collection, ...payload },
      depth: call.depth,
    });
  const find = (trx: typeof database.db, collection: string, id: string) =>
    repo.lock(trx, call.appId, collection, id);

  const write = async (op: "replace" | "patch", c: unknown, i: unknown, input: unknown) => {
    const collection = coll(op, c);
    const id = docId(op, i);
    const given = body(op, input);
    const now = clock.iso();
    return writeWithEvents(deps, async (trx, emit) => {
      const prev = await find(trx, collection, id);
      if (!prev) return null;
      const prevData = JSON.parse(prev.body) as unknown;
      const data = op === "replace" ? given : mergePatch(prevData, given);
      await repo.setBody(trx, call.appId, collection, id, JSON.stringify(data), now);
      await event(emit, collection, "update", { id, data, prev_data: prevData });
      return { id, data, created_at: d.fromTimestamp(prev.created_at), updated_at: now };
    });
  };

  return {
    async create(c: unknown, input: unknown, opts: unknown) {
      const collection = coll("create", c);
      const data = body("create", input);
      const o = options("docs.create", opts, ["id"] as const);
      const id = o.id === undefined || o.id === null ? newId() : docId("create", o.id);
      const now = clock.iso();
      return writeWithEvents(deps, async (trx, emit) => {
        if (await find(trx, collection, id)) fail("docs.create", "a document with this id already exists");
        await repo.insert(trx, call.appId, collection, {
          id,
          body: JSON.stringify(data),
          created_at: now,
          updated_at: now,
        });
        await event(emit, collection, "create", { id, data, prev_data: null });
        return { id, data, created_at: now, updated_at: now };
      });
    },
    async get(c: unknown, i: unknown) {
      const collection = coll("get", c);
      const id = docId("get", i);
      const r = await repo.find(call.appId, collection, id);
      return r ? view(r) : null;
    },
    replace: (c: unknown, i: unknown, input: unknown) => write("replace", c, i, input),
    patch: (c: unknown, i: unknown, input: unknown) => write("patch", c, i, input),
    async delete(c: unknown, i: unknown) {
      const collection = coll("delete", c);
      const id = docId("delete", i);
      return writeWithEvents(deps, async (trx, emit) => {
        const prev = await find(trx, collection, id);
        if (!prev) return false;
        await repo.delete(trx, call.appId, collection, id);
        await event(emit, collection, "delete", { id, prev_data: JSON.parse(prev.body) });
        return true;
      });
    },
    async list(c: unknown, opts: unknown) {
      const collection = coll("list", c);
      const o = options("docs.list", opts, ["cursor", "limit"] as const);
      const cursor = optString("docs.list", "cursor", o.cursor);
      const n = limit("docs.list", o.limit);
      const rows = await repo.list(call.appId, collection, { after: cursor, limit: n + 1 });
      const page = rows.slice(0, n);
      return { items: page.map(view), cursor: rows.length > n ? (page[page.length - 1]?.id ?? null) : null };
    },
  };
}
