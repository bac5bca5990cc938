import { describe, expect, it } from "vitest";
import type { ScriptRecord } from "../../src/control/scripts-repository.js";
import { createModuleResolver, importNames } from "../../src/sandbox/module-loader.js";

const APP = "app-1";
function rec(
  name: string,
  source: string,
  kind: "endpoint" | "module" = "module",
  app = APP,
  updated = "t1",
): ScriptRecord {
  return {
    id: `id-${app}-${name}`,
    app_id: app,
    name,
    kind,
    source,
    description: "",
    timeout_seconds: 30,
    sandbox: {},
    memory_limit_mb: null,
    created_at: "t0",
    updated_at: updated,
    language: "javascript",
    authored_source: null,
    version: 1,
  };
}

function store(records: ScriptRecord[]) {
  const calls: string[] = [];
  return {
    calls,
    byName: async (appId: string, name: string) => {
      calls.push(name);
      return records.find((r) => r.app_id === appId && r.name === name) ?? null;
    },
  };
}

describe("module resolver", () => {
  it("lists import and re-export sources", () => {
    expect(
      importNames(
        `import a from "x"; import { b } from "y"; export * from "z"; export { c } from "x"; export const d = 1;`,
      ),
    ).toEqual(["x", "y", "z"]);
  });

  it("resolves the transitive imports in the caller's app only", async () => {
    const s = store([
      rec("a", `import { b } from "b"; export const a = 1;`),
      rec("b", `export const b = 2;`),
      rec("c", `export const c = 3;`, "module", "other-app"),
    ]);
    const r = createModuleResolver({ scripts: s, cacheSize: 16 });
    const entry = rec("main", `import { a } from "a"; export default () => a;`, "endpoint");
    expect([...(await r.resolve(entry)).keys()]).toEqual(["a", "b"]);
    await expect(
      r.resolve(rec("m2", `import { c } from "c"; export default () => c;`, "endpoint")),
    ).rejects.toThrow('Module "c" is not a module script of this app.');
  });

  it("rejects cycles, endpoint imports and chains deeper than 8", async () => {
    const cyc = store([
      rec("x", `import "y"; export const x = 1;`),
      rec("y", `import "x"; export const y = 1;`),
    ]);
    await expect(
      createModuleResolver({ scripts: cyc, cacheSize: 16 }).resolve(
        rec("main", `import "x"; export default () => 1;`, "endpoint"),
      ),
    ).rejects.toThrow(/Import cycle: main → x → y → x/);
    const ep = store([rec("ep", `export default () => 1;`, "endpoint")]);
    await expect(
      createModuleResolver({ scripts: ep, cacheSize: 16 }).resolve(
        rec("main", `import "ep"; export default () => 1;`, "endpoint"),
      ),
    ).rejects.toThrow(/not a module script/);
    const chain = (n: number) =>
      Array.from({ length: n }, (_, i) =>
        rec(`m${i}`, i + 1 < n ? `import "m${i + 1}"; export const v = 1;` : "export const v = 1;"),
      );
    const entry = rec("main", `import "m0"; export default () => 1;`, "endpoint");
    expect(
      (await createModuleResolver({ scripts: store(chain(8)), cacheSize: 16 }).resolve(entry)).size,
    ).toBe(8);
    await expect(
      createModuleResolver({ scripts: store(chain(9)), cacheSize: 16 }).resolve(entry),
    ).rejects.toThrow(/deeper than 8/);
  });

  it("caches parsed imports per script version in a bounded LRU", async () => {
    const r = createModuleResolver({ scripts: store([]), cacheSize: 2 });
    const v1 = rec("s", `import "a"; export default 1;`, "endpoint", APP, "t1");
    expect(r.importsOf(v1)).toEqual(["a"]);
    // Same id and updated_at: served from the cache (even if the text differed).
    expect(r.importsOf({ ...v1, source: `export default 1;` })).toEqual(["a"]);
    // A new version (updated_at) is parsed afresh.
    expect(r.importsOf({ ...v1, updated_at: "t2", source: `export default 1;` })).toEqual([]);
    r.importsOf(rec("other", `import "q"; export default 1;`, "endpoint"));
    expect(r.cachedEntries).toBe(2);
    // The oldest entry (v1@t1) was evicted: it is parsed again from its current text.
    expect(r.importsOf({ ...v1, source: `export default 1;` })).toEqual([]);
  });
});
