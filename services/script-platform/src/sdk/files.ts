import { ScriptVisibleError } from "../sandbox/engine.js";
import { fail, isPlainObject, limit, name, options, optString } from "./args.js";
import { blobStore } from "./blob-store.js";
import { type Emit, writeWithEvents } from "./events.js";
import { type FileRow, filesRepo } from "./files-repository.js";
import type { SdkCall, SdkDeps } from "./types.js";

/** files.collection(name): bytes on disk, metadata rows, SHA-256 verified on every read. */
export function filesOps(deps: SdkDeps, call: SdkCall) {
  const { database, clock } = deps;
  const d = database.dialect;
  const blobs = blobStore(deps.filesRoot);
  const repo = filesRepo(database);
  const coll = (op: string, v: unknown) => name(`files.${op}`, "collection", v, 200);
  const fileName = (op: string, v: unknown) => name(`files.${op}`, "name", v, 1024);
  const meta = (collection: string, r: Omit<FileRow, "collection">) => ({
    collection,
    name: r.name,
    content_type: r.content_type,
    size: Number(r.size),
    sha256: r.sha256,
    created_at: d.fromTimestamp(r.created_at),
    updated_at: d.fromTimestamp(r.updated_at),
  });
  const bytesOf = (op: string, v: unknown, required: boolean): Buffer | undefined => {
    if (v === undefined || v === null) {
      if (required) fail(`files.${op}`, "missing required field: data");
      return undefined;
    }
    if (typeof v === "string") return Buffer.from(v, "utf8");
    if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength);
    fail(`files.${op}`, "data must be a Uint8Array or a string");
  };
  const spec = (op: string, v: unknown) => {
    if (v === undefined || v === null) fail(`files.${op}`, "missing required field: file");
    if (!isPlainObject(v)) fail(`files.${op}`, "the argument must be an object {name, content_type?, data}");
    const o = options(`files.${op}`, v, ["name", "content_type", "data"] as const);
    return {
      name: fileName(op, o.name),
      contentType: optString(`files.${op}`, "content_type", o.content_type, 255),
      data: bytesOf(op, o.data, op === "create"),
      dataIsString: typeof o.data === "string",
    };
  };
  const event = (
    emit: Emit,
    collection: string,
    operation: "create" | "update" | "delete",
    m: Record<string, unknown>,
  ) =>
    emit({
      appId: call.appId,
      kind: "files",
      collection,
      operation,
      payload: { operation, ...m },
      depth: call.depth,
    });

  return {
    async create(c: unknown, input: unknown) {
      const collection = coll("create", c);
      const s = spec("create", input);
      const data = s.data ?? Buffer.alloc(0);
      const contentType =
        s.contentType ?? (s.dataIsString ? "text/plain; charset=utf-8" : "application/octet-stream");
      const sha = blobs.sha256(data);
      const path = await blobs.write(call.appId, data);
      const now = clock.iso();
      try {
        return await writeWithEvents(deps, async (trx, emit) => {
          if (await repo.lock(trx, call.appId, collection, s.name))
            fail("files.create", "a file with this name already exists; use update");
          const row = {
            name: s.name,
            content_type: contentType,
            size: data.byteLength,
            sha256: sha,
            path,
            created_at: now,
            updated_at: now,
          };
          await repo.insert(trx, call.appId, { collection, ...row });
          const m = meta(collection, row);
          await event(emit, collection, "create", m);
          return m;
        });
      } catch (err) {
        await blobs.remove(path);
        throw err;
      }
    },
    async head(c: unknown, n: unknown) {
      const collection = coll("head", c);
      const r = await repo.find(call.appId, collection, fileName("head", n));
      return r ? meta(collection, r) : null;
    },
    async get(c: unknown, n: unknown) {
      const collection = coll("get", c);
      const fname = fileName("get", n);
      const r = await repo.find(call.appId, collection, fname);
      if (!r) return null;
      let data: Buffer;
      try {
        data = await blobs.read(r.path);
      } catch {
        throw new ScriptVisibleError(`files.get: the stored bytes of "${fname}" are missing`);
      }
      if (blobs.sha256(data) !== r.sha256)
        throw new ScriptVisibleError(
          `files.get: checksum mismatch for "${fname}" (the stored bytes are damaged)`,
        );
      return { ...meta(collection, r), data };
    },
    async update(c: unknown, input: unknown) {
      const collection = coll("update", c);
      const s = spec("update", input);
      const data = s.data;
      const sha = data ? blobs.sha256(data) : null;
      const path = data ? await blobs.write(call.appId, data) : null;
      const now = clock.iso();
      let old: string | null = null;
      try {
        const out = await writeWithEvents(deps, async (trx, emit) => {
          const prev = await repo.lock(trx, call.appId, collection, s.name);
          if (!prev) return null;
          const row = {
            ...prev,
            content_type: s.contentType ?? prev.content_type,
            ...(data && path && sha ? { size: data.byteLength, sha256: sha, path } : {}),
            updated_at: now,
          };
          await repo.update(trx, call.appId, collection, s.name, row);
          if (path) old = prev.path;
          const m = meta(collection, row);
          await event(emit, collection, "update", m);
          return m;
        });
        if (!out && path) await blobs.remove(path);
        if (old) await blobs.remove(old);
        return out;
      } catch (err) {
        if (path) await blobs.remove(path);
        throw err;
      }
    },
    async delete(c: unknown, n: unknown) {
      const collection = coll("delete", c);
      const fname = fileName("delete", n);
      const removed = await writeWithEvents(deps, async (trx, emit) => {
        const prev = await repo.lock(trx, call.appId, collection, fname);
        if (!prev) return null;
        await repo.delete(trx, call.appId, collection, fname);
        await event(emit, collection, "delete", meta(collection, prev));
        return prev.path;
      });
      if (removed === null) return false;
      await blobs.remove(removed);
      return true;
    },
    async list(c: unknown, opts: unknown) {
      const collection = coll("list", c);
      const o = options("files.list", opts, ["prefix", "cursor", "limit"] as const);
      const prefix = optString("files.list", "prefix", o.prefix);
      const cursor = optString("files.list", "cursor", o.cursor);
      const n = limit("files.list", o.limit);
      const rows = await repo.inCollection(call.appId, collection, { prefix, after: cursor, limit: n + 1 });
      const page = rows.slice(0, n);
      return {
        items: page.map((r) => meta(collection, r)),
        cursor: rows.length > n ? (page[page.length - 1]?.name ?? null) : null,
      };
    },
  };
}
