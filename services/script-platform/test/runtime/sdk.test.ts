import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { newId } from "@app/kit/ids";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pubsubOps, verifySubscriberToken } from "../../src/sdk/pubsub.js";
import { insertTrigger } from "../../src/triggers/repository.js";
import { principalWith, sdkHarness } from "./sdk-harness.js";

const A = "0190a000-0000-7000-8000-00000000000a";
const B = "0190a000-0000-7000-8000-00000000000b";

describe("SDK", () => {
  let h: Awaited<ReturnType<typeof sdkHarness>>;
  beforeAll(async () => {
    h = await sdkHarness();
  });
  afterAll(async () => {
    await h.cleanup();
  });

  it("kv: set/get/has/delete/list with prefix and cursor", async () => {
    const v = await h.value(
      A,
      `export default async () => {
        const c = kv.collection("visits");
        const before = await c.get("count");
        await c.set("count", 1);
        await c.set("obj", { a: [1, "x", null], b: true });
        for (const k of ["p:1", "p:2", "p:3", "q:1"]) await c.set(k, k);
        const page1 = await c.list({ prefix: "p:", limit: 2 });
        const page2 = await c.list({ prefix: "p:", limit: 2, cursor: page1.cursor });
        const deleted = await c.delete("count");
        const again = await c.delete("count");
        let bad; try { await c.list({ nope: 1 }); } catch (e) { bad = e.message; }
        return { before, obj: await c.get("obj"), has: await c.has("obj"), hasGone: await c.has("count"), page1, page2, deleted, again, bad };
      }`,
    );
    expect(v).toEqual({
      before: null,
      obj: { a: [1, "x", null], b: true },
      has: true,
      hasGone: false,
      page1: {
        items: [
          { key: "p:1", value: "p:1" },
          { key: "p:2", value: "p:2" },
        ],
        cursor: "p:2",
      },
      page2: { items: [{ key: "p:3", value: "p:3" }], cursor: null },
      deleted: true,
      again: false,
      bad: "kv.list: unknown option: nope",
    });
  });

  it("docs: create/get/replace/patch/delete/list, and events carry prev_data", async () => {
    await insertTrigger(h.database.db, h.database.dialect, {
      id: "0190a000-0000-7000-8000-0000000000d1",
      app_id: A,
      kind: "docs",
      script_id: "0190a000-0000-7000-8000-0000000000d2",
      enabled: true,
      registered_by_principal: null,
      retry: null,
      created_at: h.clock.iso(),
      detail: {
        collection_pattern: "people",
        operations: null,
        topic_pattern: null,
        cron_schedule: null,
        cron_timezone: null,
        cron_next_due_at: null,
        cron_last_fired_at: null,
        email_inbound_secret_enc: null,
      },
    } as never);
    const v = (await h.value(
      A,
      `export default async () => {
        const c = docs.collection("people");
        const made = await c.create({ name: "Ada", tags: ["x"], nested: { a: 1, b: 2 } }, { id: "ada" });
        let dup; try { await c.create({}, { id: "ada" }); } catch (e) { dup = e.message; }
        const patched = await c.patch("ada", { nested: { b: null, c: 3 }, extra: 1 });
        const replaced = await c.replace("ada", { name: "Ada L." });
        const auto = await c.create({ n: 1 });
        const list = await c.list({ limit: 10 });
        const del = await c.delete("ada");
        return { made: made.data, dup, patched: patched.data, replaced: replaced.data, autoId: typeof auto.id, count: list.items.length, del, gone: await c.get("ada"), missing: await c.patch("nope", {}) };
      }`,
    )) as Record<string, unknown>;
    expect(v).toEqual({
      made: { name: "Ada", tags: ["x"], nested: { a: 1, b: 2 } },
      dup: "docs.create: a document with this id already exists",
      patched: { name: "Ada", tags: ["x"], nested: { a: 1, c: 3 }, extra: 1 },
      replaced: { name: "Ada L." },
      autoId: "string",
      count: 2,
      del: true,
      gone: null,
      missing: null,
    });
    const rows = await h.database.db
      .selectFrom("outbox")
      .selectAll()
      .where("app_id", "=", A)
      .orderBy("id")
      .execute();
    const events = rows.map(
      (r) => (JSON.parse(r.payload) as { event: { docs: Record<string, unknown> } }).event.docs,
    );
    expect(events.map((e) => e.operation)).toEqual(["create", "update", "update", "create", "delete"]);
    expect(events[2]).toMatchObject({
      id: "ada",
      data: { name: "Ada L." },
      prev_data: { name: "Ada", extra: 1 },
    });
    expect(events[4]).toMatchObject({ id: "ada", prev_data: { name: "Ada L." } });
    await h.database.db.deleteFrom("outbox").execute();
  });

  it("docs.patch does not pollute host prototypes", async () => {
    const v = await h.value(
      A,
      `export default async () => {
        const c = docs.collection("p");
        await c.create({ a: 1 }, { id: "x" });
        const r = await c.patch("x", JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"polluted": true}}}'));
        return Object.keys(r.data);
      }`,
    );
    expect(v).toEqual(["a", "__proto__", "constructor"]);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it("files: bytes on disk with checksum, empty blobs, missing fields named, tampering detected", async () => {
    const v = (await h.value(
      A,
      `export default async () => {
        const c = files.collection("docs");
        const made = await c.create({ name: "a.bin", content_type: "application/x-test", data: new Uint8Array([1, 2, 3]) });
        const text = await c.create({ name: "t.txt", data: "héllo" });
        const empty = await c.create({ name: "empty", data: new Uint8Array(0) });
        const errs = [];
        for (const bad of [{ data: "x" }, { name: "n" }, { name: "n", data: 5 }, { name: "n", data: "x", extra: 1 }]) {
          try { await c.create(bad); errs.push("no error"); } catch (e) { errs.push(e.message); }
        }
        const got = await c.get("a.bin");
        const upd = await c.update({ name: "a.bin", data: "new" });
        const got2 = await c.get("a.bin");
        const list = await c.list({ prefix: "a" });
        return { made, text: [text.size, text.content_type], emptySize: empty.size, emptyData: (await c.get("empty")).data.length, errs,
          got: Array.from(got.data), upd: upd.sha256, got2: Array.from(got2.data), listNames: list.items.map((i) => i.name), head: await c.head("none") };
      }`,
    )) as Record<string, unknown>;
    expect(v.made).toMatchObject({
      name: "a.bin",
      content_type: "application/x-test",
      size: 3,
      sha256: "039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81",
    });
    expect(v.text).toEqual([6, "text/plain; charset=utf-8"]);
    expect(v.emptySize).toBe(0);
    expect(v.emptyData).toBe(0);
    expect(v.errs).toEqual([
      "files.create: missing required field: name",
      "files.create: missing required field: data",
      "files.create: data must be a Uint8Array or a string",
      "files.create: unknown option: extra",
    ]);
    expect(v.got).toEqual([1, 2, 3]);
    expect(v.got2).toEqual([110, 101, 119]);
    expect(v.listNames).toEqual(["a.bin"]);
    expect(v.head).toBeNull();
    // Bytes live on disk; the old blob of the update is gone, no temp files remain.
    const row = await h.database.db
      .selectFrom("files")
      .selectAll()
      .where("name", "=", "a.bin")
      .executeTakeFirstOrThrow();
    const path = join(h.deps.filesRoot, row.path);
    expect(readFileSync(path).toString()).toBe("new");
    const dir = readdirSync(join(path, ".."));
    expect(dir.filter((f) => f.startsWith(".tmp"))).toEqual([]);
    expect(dir.length).toBe(3);
    // A write whose row cannot commit (duplicate name) leaves no blob behind.
    const dup = await h.run(
      A,
      `export default async () => files.collection("docs").create({ name: "t.txt", data: "again" })`,
    );
    expect(dup).toMatchObject({
      ok: false,
      message: "Error: files.create: a file with this name already exists; use update",
    });
    expect(readdirSync(join(path, "..")).length).toBe(3);
    // Tamper with the bytes: a read is an error naming the checksum, never the path.
    writeFileSync(path, "evil");
    const r = await h.run(
      A,
      `export default async () => (await files.collection("docs").get("a.bin")).data.length;`,
    );
    expect(r).toMatchObject({ ok: false, kind: "script_error" });
    if (!r.ok) {
      expect(r.message).toMatch(/checksum mismatch/);
      expect(r.message).not.toContain(h.deps.filesRoot);
    }
    const del = await h.value(
      A,
      `export default async () => [await files.collection("docs").delete("a.bin"), await files.collection("docs").delete("a.bin")];`,
    );
    expect(del).toEqual([true, false]);
  });

  it("secrets: JSON round trip keeps types, stored encrypted, size cap, names-only list", async () => {
    const v = await h.value(
      A,
      `export default async () => {
        await secrets.set("api", { token: "s3cr3t-value", n: 42, ok: true, list: [1, null] });
        await secrets.set("num", 7);
        let big; try { await secrets.set("big", "x".repeat(70000)); } catch (e) { big = e.message; }
        return { api: await secrets.get("api"), num: await secrets.get("num"), none: await secrets.get("none"), list: await secrets.list(), big };
      }`,
    );
    expect(v).toEqual({
      api: { token: "s3cr3t-value", n: 42, ok: true, list: [1, null] },
      num: 7,
      none: null,
      list: [
        { name: "api", updated_at: h.clock.iso() },
        { name: "num", updated_at: h.clock.iso() },
      ],
      big: "secrets.set: the value is larger than 65536 bytes",
    });
    const raw = await h.database.db
      .selectFrom("secrets")
      .selectAll()
      .where("name", "=", "api")
      .executeTakeFirstOrThrow();
    expect(raw.value_enc).not.toContain("s3cr3t");
    expect(raw.value_enc).toMatch(/^v1\./);
    expect(await h.database.db.selectFrom("outbox").selectAll().execute()).toEqual([]);
  });

  it("isolates apps by the calling context: another app sees none of it", async () => {
    await h.value(
      A,
      `export default async () => { await kv.collection("shared").set("k", "from A"); await secrets.set("s", "A only"); await docs.collection("d").create({a: 1}, {id: "x"}); await files.collection("f").create({name: "n", data: "A"}); }`,
    );
    const v = await h.value(
      B,
      `export default async () => ({ kv: await kv.collection("shared").get("k"), list: (await kv.collection("shared").list()).items.length, s: await secrets.get("s"), doc: await docs.collection("d").get("x"), file: await files.collection("f").head("n") })`,
    );
    expect(v).toEqual({ kv: null, list: 0, s: null, doc: null, file: null });
  });

  it("checks capabilities when a principal is present", async () => {
    const viewer = principalWith(A, "viewer");
    const r = await h.run(
      A,
      `export default async () => { const got = await kv.collection("shared").get("k"); await kv.collection("shared").set("k", 1); return got; }`,
      { principal: viewer },
    );
    expect(r).toMatchObject({
      ok: false,
      kind: "script_error",
      message: "Error: kv.set: permission denied (needs script:write).",
    });
    const other = principalWith(B, "editor");
    const r2 = await h.run(A, `export default async () => kv.collection("shared").get("k")`, {
      principal: other,
    });
    expect(r2).toMatchObject({ ok: false, message: expect.stringContaining("permission denied") });
    const editor = principalWith(A, "editor");
    expect(
      await h.value(
        A,
        `export default async () => { await secrets.set("e", 1); return kv.collection("shared").get("k"); }`,
        { principal: editor },
      ),
    ).toBe("from A");
  });

  it("pubsub: publishDurable base64-encodes bytes at any depth; subscriber tokens verify per app and topic", async () => {
    await insertTrigger(h.database.db, h.database.dialect, {
      id: "0190a000-0000-7000-8000-0000000000e1",
      app_id: A,
      kind: "pubsub",
      script_id: "0190a000-0000-7000-8000-0000000000e2",
      enabled: true,
      registered_by_principal: null,
      retry: null,
      created_at: h.clock.iso(),
      detail: {
        collection_pattern: null,
        operations: null,
        topic_pattern: "orders.*",
        cron_schedule: null,
        cron_timezone: null,
        cron_next_due_at: null,
        cron_last_fired_at: null,
        email_inbound_secret_enc: null,
      },
    } as never);
    const v = (await h.value(
      A,
      `export default async () => {
        const r1 = await pubsub.publishDurable("orders.new", { id: 1, blob: new Uint8Array([104, 105]), deep: [{ b: new Uint8Array([0]) }] });
        const r2 = await pubsub.publishDurable("other", "x");
        const token = await pubsub.subscriberToken("orders.new", { ttl_s: 120 });
        return { r1, r2, token };
      }`,
    )) as { r1: unknown; r2: unknown; token: string };
    expect(v.r1).toEqual({ enqueued: 1 });
    expect(v.r2).toEqual({ enqueued: 0 });
    const row = await h.database.db
      .selectFrom("outbox")
      .selectAll()
      .where("source_kind", "=", "pubsub")
      .executeTakeFirstOrThrow();
    expect(JSON.parse(row.payload).event.pubsub.message).toEqual({
      id: 1,
      blob: "aGk=",
      deep: [{ b: "AA==" }],
    });
    expect(await verifySubscriberToken(h.deps, A, "orders.new", v.token)).toBe(true);
    expect(await verifySubscriberToken(h.deps, A, "orders.old", v.token)).toBe(false);
    expect(await verifySubscriberToken(h.deps, B, "orders.new", v.token)).toBe(false);
    expect(await verifySubscriberToken(h.deps, A, "orders.new", `${v.token}x`)).toBe(false);
    const key = await h.database.db
      .selectFrom("app_signing_keys")
      .selectAll()
      .where("app_id", "=", A)
      .executeTakeFirstOrThrow();
    expect(key.key_enc).toMatch(/^v1\./);
    await h.clock.advance(121_000);
    expect(await verifySubscriberToken(h.deps, A, "orders.new", v.token)).toBe(false);
  });

  it("clamps subscriber token lifetimes to PLATFORM_SUBSCRIBER_TOKEN_* (default, min, max)", async () => {
    const A = newId();
    const deps = { ...h.deps, tokenTtl: { default: 100, min: 50, max: 200 } };
    const expiresIn = async (opts: unknown) => {
      const token = (await pubsubOps(deps, {
        appId: A,
        scriptId: "s",
        executionId: "e",
        principal: null,
        depth: 0,
      }).subscriberToken("t", opts)) as string;
      const { e } = JSON.parse(Buffer.from(token.split(".")[0] as string, "base64url").toString()) as {
        e: number;
      };
      return e - Math.floor(h.clock.now() / 1000);
    };
    expect(await expiresIn(undefined)).toBe(100);
    expect(await expiresIn({ ttl_s: 10 })).toBe(50);
    expect(await expiresIn({ ttl_s: 150 })).toBe(150);
    expect(await expiresIn({ ttl_s: 1e9 })).toBe(200);
  });
});
