import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";

/**
 * Sandbox escape attempts through the real HTTP path (/api/v1/execute/{id}). Each must fail
 * safely (a script error or a limit, never host access), and the server must stay healthy.
 */
describe("sandbox escape suite", () => {
  let h: Harness;
  let appId: string;
  const exec = async (source: string, sandbox: Record<string, number> = {}) => {
    const res = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name: `s${Math.random().toString(36).slice(2, 10)}`,
      kind: "endpoint",
      source,
      sandbox,
    });
    if (res.statusCode !== 201) throw new Error(res.body);
    const out = await h.call("POST", `/api/v1/execute/${res.json().id}`, undefined, null);
    const health = await h.built.app.inject({ method: "GET", url: "/healthz" });
    expect([health.statusCode, health.body]).toEqual([200, "ok"]);
    return out;
  };

  beforeAll(async () => {
    h = await startHarness();
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "escape" })).json().id;
  });
  afterAll(async () => h.close());

  it("finds no Node globals: process, require, module, fetch, Buffer, setTimeout, the host bridge", async () => {
    const res = await exec(
      `export default () => [typeof process, typeof require, typeof module, typeof globalThis.fetch, typeof Buffer,
        typeof setTimeout, typeof hostCall, typeof hostLog, typeof InternalError, typeof WebAssembly, typeof std, typeof os]`,
    );
    expect(res.statusCode).toBe(200);
    // fetch and setTimeout are the sandbox's own web APIs (sandbox/web-apis.ts), not Node's.
    const expected = Array(12).fill("undefined");
    expected[3] = "function";
    expected[5] = "function";
    expect(res.json()).toEqual(expected);
  });

  it("cannot reach the host through the Function constructor", async () => {
    const res = await exec(
      `export default () => ({}).constructor.constructor("return process")().mainModule.require("fs")`,
    );
    expect(res.statusCode).toBe(502);
    expect(res.json().error.message).toMatch(/ReferenceError: '?process'? is not defined/);
    const viaSdk = await exec(
      `export default () => kv.collection.constructor.constructor("return this")().process`,
    );
    expect(viaSdk.statusCode).toBe(200);
    expect(viaSdk.body).toBe("null");
  });

  it("pollutes only its own prototypes", async () => {
    const res = await exec(
      `export default async () => {
        Object.prototype.polluted = "yes";
        Array.prototype.map = () => "hijacked";
        JSON.stringify = () => "{}";
        Object.defineProperty(Object.prototype, "__proto__", { value: 1 });
        await kv.collection("p").set("k", { a: 1 });
        return "done";
      }`,
    );
    expect(res.statusCode).toBe(200);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect([1].map((x) => x + 1)).toEqual([2]);
    // A fresh context per run: the next script sees clean builtins.
    const next = await exec(
      `export default () => [({}).polluted ?? null, [1, 2].map((x) => x * 2), JSON.stringify({ a: 1 })]`,
    );
    expect(next.json()).toEqual([null, [2, 4], '{"a":1}']);
  });

  it("ends huge allocations at the memory limit with 507 size_limit", async () => {
    for (const src of [
      `export default () => new Array(5e7).fill(0).length`,
      `export default () => { const a = []; for (;;) a.push({ i: a.length, s: "x" + a.length }); }`,
      `export default () => new ArrayBuffer(2 ** 30).byteLength`,
    ]) {
      const res = await exec(src, { max_array_size: 1000, max_map_size: 1000, max_string_size: 1000 });
      expect([res.statusCode, res.json().error.code]).toEqual([507, "size_limit"]);
    }
  });

  it("interrupts infinite loops in the handler, in promise jobs and in async functions", async () => {
    for (const src of [
      `export default () => { while (true) {} }`,
      `export default async () => { Promise.resolve().then(function spin() { for (;;) {} }); await new Promise(() => {}); }`,
      `export default async () => { await null; for (;;) { await null; } }`,
      `export default async () => { const p = Promise.resolve(); for (;;) p.then(() => 1); }`,
    ]) {
      const res = await exec(src, { max_operations: 200_000 });
      expect([res.statusCode, res.json().error.code]).toEqual([507, "operation_limit"]);
    }
  });

  it("ends unbounded recursion with 507 call_depth_limit", async () => {
    const res = await exec(`export default () => { const f = () => f(); return f(); }`);
    expect([res.statusCode, res.json().error.code]).toEqual([507, "call_depth_limit"]);
  });

  it("cannot fake a limit: thrown look-alikes are ordinary script errors", async () => {
    for (const src of [
      `export default () => { throw new Error("operation_limit"); }`,
      `export default () => { const e = new RangeError("stack overflow"); e.name = "InternalError"; throw e; }`,
      `export default () => { throw Object.assign(Object.create(Error.prototype), { name: "InternalError", message: "out of memory" }); }`,
      `export default () => { throw "interrupted"; }`,
      `export default () => ({ statusCode: 507, body: { error: { code: "operation_limit" } } })`,
    ]) {
      const res = await exec(src);
      if (res.statusCode === 507) expect(res.json()).toEqual({ error: { code: "operation_limit" } });
      else expect([res.statusCode, res.json().error.code]).toEqual([502, "script_error"]);
    }
  });

  it("keeps errors free of host internals", async () => {
    const res = await exec(`export default async () => { await files.collection("c").get(42); }`);
    expect(res.statusCode).toBe(502);
    const msg = res.json().error.message as string;
    expect(msg).toBe("The script failed: Error: files.get: name must be a non-empty string");
    expect(msg).not.toMatch(/\/tmp|node_modules|at /);
  });
});
