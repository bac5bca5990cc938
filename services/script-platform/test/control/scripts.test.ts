import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { analyzeSource } from "../../src/control/script-validation.js";
import { type Harness, startHarness } from "./harness.js";

const ENDPOINT = "export default function (ctx) { return { ok: true }; }";

describe("scripts: save-time validation and the dependency graph", () => {
  let h: Harness;
  let appId: string;
  const create = (body: Record<string, unknown>) =>
    h.call("POST", "/api/v1/admin/scripts", { app_id: appId, kind: "endpoint", source: ENDPOINT, ...body });

  beforeAll(async () => {
    h = await startHarness({ PLATFORM_SANDBOX_MAX_CALL_LEVELS: "64" });
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "scripts" })).json().id;
  });
  afterAll(async () => h.close());

  it("creates with defaults, reads, lists with an app filter, updates and deletes", async () => {
    const res = await create({ name: "ep", description: "d" });
    expect(res.statusCode).toBe(201);
    const s = res.json();
    expect(s).toMatchObject({
      app_id: appId,
      name: "ep",
      kind: "endpoint",
      description: "d",
      timeout_seconds: 30,
      sandbox: {},
      memory_limit_mb: null,
      imports: [],
    });
    expect((await h.call("GET", `/api/v1/admin/scripts/${s.id}`)).json().source).toBe(ENDPOINT);
    const filtered = (await h.call("GET", `/api/v1/admin/scripts?app_id=${appId}`)).json().items;
    expect(filtered.map((x: { name: string }) => x.name)).toEqual(["ep"]);
    const bySlug = (await h.call("GET", "/api/v1/admin/scripts?app=scripts")).json().items;
    expect(bySlug).toHaveLength(1);
    const all = (await h.call("GET", "/api/v1/admin/scripts")).json().items;
    expect(all.map((x: { name: string }) => x.name)).toEqual(expect.arrayContaining(["ep", "hello"]));

    const upd = await h.call("PUT", `/api/v1/admin/scripts/${s.id}`, {
      description: "new",
      timeout_seconds: 300,
      sandbox: { max_operations: 5000 },
      memory_limit_mb: 64,
    });
    expect(upd.statusCode).toBe(200);
    expect(upd.json()).toMatchObject({
      description: "new",
      timeout_seconds: 300,
      sandbox: { max_operations: 5000 },
      memory_limit_mb: 64,
    });
    expect((await h.call("DELETE", `/api/v1/admin/scripts/${s.id}`)).statusCode).toBe(204);
    expect((await h.call("GET", `/api/v1/admin/scripts/${s.id}`)).statusCode).toBe(404);
    expect((await h.call("PUT", `/api/v1/admin/scripts/${s.id}`, { description: "x" })).statusCode).toBe(404);
    expect((await h.call("DELETE", `/api/v1/admin/scripts/${s.id}`)).statusCode).toBe(404);
    expect((await h.call("GET", "/api/v1/admin/scripts/not-a-uuid")).statusCode).toBe(404);
  });

  it("refuses a duplicate name in the same app with 409 but allows it in another app", async () => {
    expect((await create({ name: "dup" })).statusCode).toBe(201);
    const dup = await create({ name: "dup" });
    expect(dup.statusCode).toBe(409);
    const other = (await h.call("POST", "/api/v1/admin/apps", { slug: "scripts-2" })).json().id;
    const res = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: other,
      name: "dup",
      source: ENDPOINT,
    });
    expect(res.statusCode).toBe(201);
    const second = (await create({ name: "dup2" })).json();
    expect((await h.call("PUT", `/api/v1/admin/scripts/${second.id}`, { name: "dup" })).statusCode).toBe(409);
  });

  it("reports syntax errors with line and column", async () => {
    const res = await create({ name: "bad", source: "export default function () {\n  return 1 +;\n}" });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatchObject({ code: "syntax_error", line: 2, column: 13 });
  });

  it("enforces the module shape, naming the line", async () => {
    const ok = [
      'import { a } from "m-base";',
      "function f(x) { return x + 1; }",
      'const N = 1, S = "s", T = `t`, B = true, Z = null, NEG = -2;',
      'const L = [1, "two", [3], { four: 4 }];',
      "export const O = { a: 1, b: [null] };",
      "export function g() { return f(2) * N; }",
      ";",
      "export { f };",
      "export default function h() {}",
    ].join("\n");
    expect((await create({ name: "m-base", kind: "module", source: "export const a = 1;" })).statusCode).toBe(
      201,
    );
    const good = await create({ name: "m-good", kind: "module", source: ok });
    expect(good.statusCode).toBe(201);
    expect(good.json().imports).toEqual(["m-base"]);
    const bad: [string, number][] = [
      ["const a = 1;\nconsole.log(a);", 2],
      ["let x = 1;", 1],
      ["var x = 1;", 1],
      ["const x = f();", 1],
      ["\n\nfor (;;) {}", 3],
      ["const x = 1;\nx = 2;", 2],
      ["const y = [1, g()];", 1],
      ["const t = `a$" + "{1}`;", 1],
      ["export const c = class {};", 1],
      ["if (true) {}", 1],
      ["const { a } = { a: 1 };", 1],
      ["export default (() => 1)();", 1],
    ];
    for (const [source, line] of bad) {
      const res = await create({ name: "m-bad", kind: "module", source });
      expect(res.statusCode, source).toBe(422);
      expect(res.json().error, source).toMatchObject({ code: "module_shape", line });
      expect(res.json().error.message).toContain(`Line ${line}`);
    }
  });

  it("requires a default export (the handler) on endpoints", async () => {
    const res = await create({ name: "nohandler", source: "export function f() {}" });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe("missing_handler");
  });

  it("checks expression depth against max_expr_depth at save time", async () => {
    const nested = (n: number) =>
      `export default function () { return ${"(1 + ".repeat(n)}1${")".repeat(n)}; }`;
    expect((await create({ name: "deep-ok", source: nested(20) })).statusCode).toBe(201);
    const tooDeep = await create({ name: "deep", source: nested(200) });
    expect(tooDeep.statusCode).toBe(422);
    expect(tooDeep.json().error).toMatchObject({ code: "expression_too_deep", limit: 128, line: 1 });
    const own = await create({ name: "deep2", source: nested(20), sandbox: { max_expr_depth: 10 } });
    expect(own.statusCode).toBe(422);
    expect(own.json().error).toMatchObject({ code: "expression_too_deep", limit: 10 });
    // Function bodies start counting again.
    expect(() =>
      analyzeSource(`export default () => [${"() => [".repeat(30)}1${"]".repeat(30)}];`, "endpoint", 8),
    ).not.toThrow();
    expect(() =>
      analyzeSource(`export default () => ${"[".repeat(9)}1${"]".repeat(9)};`, "endpoint", 8),
    ).toThrow(expect.objectContaining({ code: "expression_too_deep" }));
  });

  it("validates sandbox overrides: integers, unknown keys, ceilings (env-overridable)", async () => {
    const ok = await create({
      name: "sb",
      sandbox: {
        max_operations: 10_000_000,
        max_string_size: 1_048_576,
        max_array_size: 100_000,
        max_map_size: 100_000,
        max_call_levels: 64,
        max_expr_depth: 128,
      },
    });
    expect(ok.statusCode).toBe(201);
    const cases: [Record<string, unknown>, string, number | null, number | null][] = [
      [{ max_operations: 10_000_001 }, "sandbox.max_operations", 10_000_001, 10_000_000],
      [{ max_string_size: 1_048_577 }, "sandbox.max_string_size", 1_048_577, 1_048_576],
      [{ max_array_size: 100_001 }, "sandbox.max_array_size", 100_001, 100_000],
      [{ max_map_size: 200_000 }, "sandbox.max_map_size", 200_000, 100_000],
      [{ max_call_levels: 65 }, "sandbox.max_call_levels", 65, 64],
      [{ max_expr_depth: 129 }, "sandbox.max_expr_depth", 129, 128],
    ];
    for (const [sandbox, field, value, ceiling] of cases) {
      const res = await create({ name: "sb2", sandbox });
      expect(res.statusCode, field).toBe(422);
      expect(res.json().error).toMatchObject({ field, value, ceiling });
      expect(res.json().error.message).toContain(String(ceiling));
    }
    const unknown = await create({ name: "sb2", sandbox: { max_memory: 1 } });
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error.field).toBe("sandbox.max_memory");
    const notInt = await create({ name: "sb2", sandbox: { max_operations: 1.5 } });
    expect(notInt.statusCode).toBe(422);
    const str = await create({ name: "sb2", sandbox: { max_operations: "5" } });
    expect(str.statusCode).toBe(422);
    const empty = await create({ name: "sb3", sandbox: {} });
    expect(empty.json().sandbox).toEqual({});
  });

  it("caps timeout_seconds at 300 and refuses unknown fields", async () => {
    const over = await create({ name: "t", timeout_seconds: 301 });
    expect(over.statusCode).toBe(422);
    expect(over.json().error).toMatchObject({ field: "timeout_seconds", value: 301, ceiling: 300 });
    expect((await create({ name: "t", timeout_seconds: 0 })).statusCode).toBe(422);
    expect((await create({ name: "t", runtime: "v8" })).statusCode).toBe(422);
  });

  it("resolves imports: same-app modules only, no node:/URL, no cycles, depth ≤ 8, naming the chain", async () => {
    const mod = (name: string, source: string) => create({ name, kind: "module", source });
    for (const spec of ["node:fs", "https://x.test/m.js", "./local", "/abs"]) {
      const res = await create({ name: "imp", source: `import x from "${spec}";\n${ENDPOINT}` });
      expect(res.statusCode, spec).toBe(422);
      expect(res.json().error.code).toBe("invalid_import");
    }
    const missing = await create({ name: "imp", source: `import { x } from "nope";\n${ENDPOINT}` });
    expect(missing.json().error).toMatchObject({ code: "import_not_found", chain: ["imp", "nope"] });
    const endpointImport = await create({ name: "imp", source: `import "dup";\n${ENDPOINT}` });
    expect(endpointImport.json().error.code).toBe("import_not_module");
    const otherApp = (await h.call("POST", "/api/v1/admin/apps", { slug: "scripts-3" })).json().id;
    await h.call("POST", "/api/v1/admin/scripts", {
      app_id: otherApp,
      name: "foreign",
      kind: "module",
      source: "export const f = 1;",
    });
    const cross = await create({ name: "imp", source: `import { f } from "foreign";\n${ENDPOINT}` });
    expect(cross.json().error.code).toBe("import_not_found");

    // A chain of 8 imports is fine; the 9th link is refused naming the whole chain.
    expect((await mod("c0", "export const v = 0;")).statusCode).toBe(201);
    for (let i = 1; i <= 7; i++)
      expect((await mod(`c${i}`, `import { v } from "c${i - 1}";\nexport { v };`)).statusCode).toBe(201);
    const ep = await create({ name: "chain-ep", source: `import { v } from "c7";\n${ENDPOINT}` });
    expect(ep.statusCode).toBe(201);
    expect(ep.json().imports).toEqual(["c7"]);
    const tooDeep = await mod("c8", 'import { v } from "c7";\nexport { v };');
    expect(tooDeep.statusCode).toBe(201); // c8 → … → c0 is 8 links
    const nine = await create({ name: "chain-ep2", source: `import { v } from "c8";\n${ENDPOINT}` });
    expect(nine.statusCode).toBe(422);
    expect(nine.json().error.code).toBe("import_too_deep");
    expect(nine.json().error.chain).toEqual([
      "chain-ep2",
      "c8",
      "c7",
      "c6",
      "c5",
      "c4",
      "c3",
      "c2",
      "c1",
      "c0",
    ]);
    // Deepening the bottom of the chain is refused too, because chain-ep would reach 9 links.
    expect((await mod("base", "export const v = 1;")).statusCode).toBe(201);
    const c0 = (await h.call("GET", `/api/v1/admin/scripts?app_id=${appId}&limit=200`))
      .json()
      .items.find((s: { name: string }) => s.name === "c0");
    const deeper = await h.call("PUT", `/api/v1/admin/scripts/${c0.id}`, {
      source: 'import { v } from "base";\nexport { v };',
    });
    expect(deeper.statusCode).toBe(422);
    expect(deeper.json().error.code).toBe("import_too_deep");

    // Cycles: a → b → a.
    expect((await mod("cy-a", "export const a = 1;")).statusCode).toBe(201);
    const b = (await mod("cy-b", 'import { a } from "cy-a";\nexport const b = 2;')).json();
    const a = (await h.call("GET", `/api/v1/admin/scripts?app_id=${appId}&limit=200`))
      .json()
      .items.find((s: { name: string }) => s.name === "cy-a");
    const cycle = await h.call("PUT", `/api/v1/admin/scripts/${a.id}`, {
      source: 'import { b } from "cy-b";\nexport const a = 1;',
    });
    expect(cycle.statusCode).toBe(422);
    expect(cycle.json().error.code).toBe("import_cycle");
    expect(cycle.json().error.chain).toEqual(["cy-a", "cy-b", "cy-a"]);
    const self = await mod("cy-self", 'import { y } from "cy-self";\nexport const x = 1;');
    expect(self.json().error.code).toBe("import_cycle");

    // The stored graph is refreshed on update.
    const rows = async () =>
      (
        await h.built.ctx.database.db
          .selectFrom("script_imports")
          .select("imported_name")
          .where("script_id", "=", b.id)
          .execute()
      ).map((r) => r.imported_name);
    expect(await rows()).toEqual(["cy-a"]);
    await h.call("PUT", `/api/v1/admin/scripts/${b.id}`, { source: "export const b = 2;" });
    expect(await rows()).toEqual([]);

    // A module others import cannot be deleted, renamed or turned into an endpoint.
    const c7 = (await h.call("GET", `/api/v1/admin/scripts?app_id=${appId}&limit=200`))
      .json()
      .items.find((s: { name: string }) => s.name === "c7");
    for (const [method, body] of [
      ["DELETE", undefined],
      ["PUT", { name: "c7-renamed" }],
      ["PUT", { kind: "endpoint", source: ENDPOINT }],
    ] as const) {
      const res = await h.call(method, `/api/v1/admin/scripts/${c7.id}`, body);
      expect(res.statusCode).toBe(409);
      expect(res.json().error.code).toBe("in_use");
    }
    // The runtime gets the transitive module closure by name.
    const entry = await h.built.ctx.scripts.byName(appId, "chain-ep");
    const modules = await h.built.ctx.scripts.modulesFor(entry as NonNullable<typeof entry>);
    expect([...modules.keys()].sort()).toEqual(["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"]);
  });

  it("never stores a cycle from two concurrent updates", async () => {
    const x = (await create({ name: "race-x", kind: "module", source: "export const x = 1;" })).json();
    const y = (await create({ name: "race-y", kind: "module", source: "export const y = 1;" })).json();
    const [rx, ry] = await Promise.all([
      h.call("PUT", `/api/v1/admin/scripts/${x.id}`, {
        source: 'import { y } from "race-y";\nexport const x = 1;',
      }),
      h.call("PUT", `/api/v1/admin/scripts/${y.id}`, {
        source: 'import { x } from "race-x";\nexport const y = 1;',
      }),
    ]);
    expect([rx.statusCode, ry.statusCode].sort()).toEqual([200, 422]);
    expect([rx, ry].find((r) => r.statusCode === 422)?.json().error.code).toBe("import_cycle");
  });

  it("refuses turning an endpoint with routes or triggers into a module (409 in_use)", async () => {
    const s = (await create({ name: "routed" })).json();
    await h.call("POST", `/api/v1/admin/scripts/${s.id}/routes`, { path: "/routed", method: "GET" });
    const res = await h.call("PUT", `/api/v1/admin/scripts/${s.id}`, {
      kind: "module",
      source: "export const a = 1;",
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().error).toMatchObject({ code: "in_use", routes: 1, triggers: 0 });

    const t = (await create({ name: "triggered" })).json();
    await h.built.ctx.database.db
      .insertInto("triggers")
      .values({
        id: "019a0000-0000-7000-8000-00000000aaaa",
        app_id: appId,
        kind: "cron",
        script_id: t.id,
        enabled: 1,
        registered_by_principal: "{}",
        retry: null,
        created_at: h.clock.iso(),
      })
      .execute();
    const res2 = await h.call("PUT", `/api/v1/admin/scripts/${t.id}`, {
      kind: "module",
      source: "export const a = 1;",
    });
    expect(res2.statusCode).toBe(409);
    expect(res2.json().error).toMatchObject({ code: "in_use", triggers: 1 });
    // Deleting the script removes its triggers (they carry no foreign key).
    expect((await h.call("DELETE", `/api/v1/admin/scripts/${t.id}`)).statusCode).toBe(204);
    const left = await h.built.ctx.database.db
      .selectFrom("triggers")
      .select("id")
      .where("script_id", "=", t.id)
      .execute();
    expect(left).toEqual([]);

    const free = (await create({ name: "free" })).json();
    const ok = await h.call("PUT", `/api/v1/admin/scripts/${free.id}`, {
      kind: "module",
      source: "export const a = 1;",
    });
    expect(ok.statusCode).toBe(200);
    expect(ok.json().kind).toBe("module");
  });
});
