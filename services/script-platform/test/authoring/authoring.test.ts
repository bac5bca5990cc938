import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";

const TS = [
  "interface Greeting { hello: string; n: number }",
  "const twice = (n: number): number => n * 2;",
  "export default async function (ctx: any): Promise<Greeting> {",
  "  const name = ctx.request.query.name as string;",
  "  return { hello: name, n: twice(21) };",
  "}",
].join("\n");

const JS_V1 = "export default function () { return { v: 1 }; }";
const JS_V2 = "export default function () { return { v: 2 }; }";

describe("authoring: TypeScript scripts, versions, restore, draft runs, SDK declarations", () => {
  let h: Harness;
  let appId: string;
  const create = (body: Record<string, unknown>) =>
    h.call("POST", "/api/v1/admin/scripts", { app_id: appId, kind: "endpoint", ...body });

  beforeAll(async () => {
    h = await startHarness();
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "authoring" })).json().id;
  });
  afterAll(async () => h.close());

  it("saves TypeScript, shows the author's source back, and runs it like the JavaScript equivalent", async () => {
    const res = await create({ name: "ts-ep", language: "typescript", source: TS });
    expect(res.statusCode).toBe(201);
    const s = res.json();
    expect(s).toMatchObject({ language: "typescript", version: 1, source: TS });
    expect(s).not.toHaveProperty("authored_source");
    const run = await h.call("GET", `/api/v1/execute/${s.id}?name=ann`);
    expect(run.statusCode).toBe(200);
    expect(run.json()).toEqual({ hello: "ann", n: 42 });
    // JavaScript stays the default.
    const js = (await create({ name: "js-ep", source: JS_V1 })).json();
    expect(js).toMatchObject({ language: "javascript", version: 1 });
  });

  it("reports TypeScript errors at the author's own line and column", async () => {
    const syntax = await create({
      name: "ts-bad",
      language: "typescript",
      source: "const a: number = 1;\nexport default function (): number {\n  return a +;\n}",
    });
    expect(syntax.statusCode).toBe(422);
    expect(syntax.json().error).toMatchObject({ code: "syntax_error", line: 3, column: 13 });
    const enumRes = await create({
      name: "ts-enum",
      language: "typescript",
      source: "export default function () { return 1; }\n  enum Color { Red }",
    });
    expect(enumRes.statusCode).toBe(422);
    expect(enumRes.json().error).toMatchObject({ code: "unsupported_typescript", line: 2, column: 3 });
    // JavaScript is not stripped: a type annotation there is a syntax error.
    const asJs = await create({ name: "ts-as-js", source: TS });
    expect(asJs.statusCode).toBe(422);
    expect(asJs.json().error).toMatchObject({ code: "syntax_error", line: 1 });
    const lang = await create({ name: "x", language: "coffee", source: JS_V1 });
    expect(lang.statusCode).toBe(422);
  });

  it("keeps every saved source as a version; list, view, restore (a new version); routes keep working", async () => {
    const s = (await create({ name: "versioned", source: JS_V1 })).json();
    const route = await h.call("POST", `/api/v1/admin/scripts/${s.id}/routes`, { path: "/versioned" });
    expect(route.statusCode).toBe(201);
    const claim = await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "authoring.test" });
    expect(claim.statusCode).toBe(201);
    const publicGet = async () =>
      (
        await h.built.app.inject({ method: "GET", url: "/versioned", headers: { host: "authoring.test" } })
      ).json();
    const up = await h.call("PUT", `/api/v1/admin/scripts/${s.id}`, { source: JS_V2 });
    expect(up.json().version).toBe(2);
    // A save that changes neither source, language nor sandbox keeps the version.
    expect((await h.call("PUT", `/api/v1/admin/scripts/${s.id}`, { description: "d" })).json().version).toBe(
      2,
    );
    const bad = await h.call("PUT", `/api/v1/admin/scripts/${s.id}`, { source: "export default (" });
    expect(bad.statusCode).toBe(422);

    const list = (await h.call("GET", `/api/v1/admin/scripts/${s.id}/versions`)).json();
    expect(list.next_cursor).toBeNull();
    expect(list.items.map((v: { version: number }) => v.version)).toEqual([2, 1]);
    expect(list.items[1]).toMatchObject({
      version: 1,
      language: "javascript",
      created_by: "root",
      size: Buffer.byteLength(JS_V1),
      sha256: createHash("sha256").update(JS_V1).digest("hex"),
    });
    const paged = (await h.call("GET", `/api/v1/admin/scripts/${s.id}/versions?limit=1`)).json();
    expect(paged.items.map((v: { version: number }) => v.version)).toEqual([2]);
    const next = (
      await h.call("GET", `/api/v1/admin/scripts/${s.id}/versions?limit=1&cursor=${paged.next_cursor}`)
    ).json();
    expect(next.items.map((v: { version: number }) => v.version)).toEqual([1]);

    const v1 = await h.call("GET", `/api/v1/admin/scripts/${s.id}/versions/1`);
    expect(v1.json()).toMatchObject({ version: 1, source: JS_V1 });
    expect((await h.call("GET", `/api/v1/admin/scripts/${s.id}/versions/9`)).statusCode).toBe(404);
    expect((await h.call("GET", `/api/v1/admin/scripts/${s.id}/versions/abc`)).statusCode).toBe(422);

    expect(await publicGet()).toEqual({ v: 2 });
    const restored = await h.call("POST", `/api/v1/admin/scripts/${s.id}/versions/1:restore`);
    expect(restored.statusCode).toBe(200);
    expect(restored.json()).toMatchObject({ version: 3, source: JS_V1, id: s.id });
    expect(await publicGet()).toEqual({ v: 1 });
    const after = (await h.call("GET", `/api/v1/admin/scripts/${s.id}/versions`)).json();
    expect(after.items.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
    expect(after.items[0].sha256).toBe(after.items[2].sha256);
    expect((await h.call("POST", `/api/v1/admin/scripts/${s.id}/versions/7:restore`)).statusCode).toBe(404);
    // Deleting the script removes its history with it.
    expect((await h.call("DELETE", `/api/v1/admin/scripts/${s.id}`)).statusCode).toBe(204);
    expect((await h.call("GET", `/api/v1/admin/scripts/${s.id}/versions`)).statusCode).toBe(404);
  });

  it("a restore of TypeScript brings back the language and the source", async () => {
    const s = (await create({ name: "lang-switch", language: "typescript", source: TS })).json();
    const js = await h.call("PUT", `/api/v1/admin/scripts/${s.id}`, {
      language: "javascript",
      source: JS_V1,
    });
    expect(js.json()).toMatchObject({ version: 2, language: "javascript" });
    const back = (await h.call("POST", `/api/v1/admin/scripts/${s.id}/versions/1:restore`)).json();
    expect(back).toMatchObject({ version: 3, language: "typescript", source: TS });
    expect((await h.call("GET", `/api/v1/execute/${s.id}?name=bo`)).json()).toEqual({ hello: "bo", n: 42 });
  });

  it("runs an unsaved draft (JavaScript or TypeScript) with logs, and validates it like a save", async () => {
    const s = (await create({ name: "drafty", source: JS_V1 })).json();
    const draft = await h.call("POST", `/api/v1/admin/scripts/${s.id}:run`, {
      language: "typescript",
      source:
        "export default async (ctx: any) => { log.info('q', ctx.request.query.x); return { statusCode: 201, headers: { 'x-a': 'b' }, body: { m: ctx.request.method, p: ctx.request.path, b: ctx.request.body } }; }",
      request: { method: "post", path: "/t", query: { x: "1" }, body: { k: 1 } },
    });
    expect(draft.statusCode).toBe(200);
    const r = draft.json();
    expect(r).toMatchObject({
      status: 201,
      headers: { "x-a": "b" },
      body: { m: "POST", p: "/t", b: { k: 1 } },
      error: null,
    });
    expect(r.logs).toEqual([expect.objectContaining({ level: "info", message: "q 1" })]);
    expect(typeof r.duration_ms).toBe("number");
    // The saved script did not change.
    expect((await h.call("GET", `/api/v1/admin/scripts/${s.id}`)).json()).toMatchObject({
      version: 1,
      source: JS_V1,
    });
    // Without source: the saved version runs.
    const saved = (
      await h.call("POST", `/api/v1/admin/scripts/${s.id}:run`, { request: { method: "GET", path: "/" } })
    ).json();
    expect(saved).toMatchObject({ status: 200, body: { v: 1 }, error: null });
    const invalid = await h.call("POST", `/api/v1/admin/scripts/${s.id}:run`, {
      source: "export default (",
      request: { method: "GET", path: "/" },
    });
    expect(invalid.statusCode).toBe(422);
    expect(invalid.json().error.code).toBe("syntax_error");
    const unknownField = await h.call("POST", `/api/v1/admin/scripts/${s.id}:run`, {
      request: { path: "/" },
      x: 1,
    });
    expect(unknownField.statusCode).toBe(422);
  });

  it("a failing draft answers what the public route would, with the error's detail", async () => {
    const s = (await create({ name: "thrower", source: JS_V1 })).json();
    const r = (
      await h.call("POST", `/api/v1/admin/scripts/${s.id}:run`, {
        source: "export default function (ctx) {\n  const o = null;\n  return o.x;\n}",
        request: { method: "GET", path: "/" },
      })
    ).json();
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ error: { code: "script_error" } });
    expect(r.error).toMatchObject({ code: "script_error", line: 3 });
    expect(r.error.message).toMatch(/TypeError/);
    // TypeScript: the line and column are the author's own (types are blanked, not removed).
    const ts = (
      await h.call("POST", `/api/v1/admin/scripts/${s.id}:run`, {
        language: "typescript",
        source:
          "interface Order { total: number }\nexport default function (ctx: any): number {\n  const o: Order | null = null as Order | null;\n  return (o as Order).total;\n}",
        request: { method: "GET", path: "/" },
      })
    ).json();
    expect(ts.error).toMatchObject({ code: "script_error", line: 4 });
    expect(ts.error.column).toBeGreaterThan(1);
  });

  it("a draft fires no triggers unless asked", async () => {
    const handler = (
      await create({
        name: "on-kv",
        source: "export default async (ctx) => { await kv.collection('seen').set(ctx.event.kv.key, true); }",
      })
    ).json();
    const trig = await h.call("POST", `/api/v1/admin/apps/${appId}/triggers/kv`, {
      script_id: handler.id,
      collection: "watched",
    });
    expect(trig.statusCode).toBe(201);
    const writer = (await create({ name: "writer", source: JS_V1 })).json();
    const src =
      "export default async (ctx) => { await kv.collection('watched').set(ctx.request.query.k, 1); return 'ok'; }";
    await h.call("POST", `/api/v1/admin/scripts/${writer.id}:run`, {
      source: src,
      request: { path: "/", query: { k: "a" } },
    });
    await h.call("POST", `/api/v1/admin/scripts/${writer.id}:run`, {
      source: src,
      request: { path: "/", query: { k: "b" } },
      fire_triggers: true,
    });
    const rows = await h.built.ctx.database.db
      .selectFrom("outbox")
      .select(["payload"])
      .where("app_id", "=", appId)
      .where("source_kind", "=", "kv")
      .execute();
    expect(
      rows.map((r) => (typeof r.payload === "string" ? JSON.parse(r.payload) : r.payload).event.kv.key),
    ).toEqual(["b"]);
  });

  it("refuses a strict-host route on a host another app claims, with the reason", async () => {
    const other = (await h.call("POST", "/api/v1/admin/apps", { slug: "authoring-other" })).json().id;
    expect(
      (await h.call("POST", `/api/v1/admin/apps/${other}/domains`, { host: "theirs.test" })).statusCode,
    ).toBe(201);
    expect(
      (await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "ours.test" })).statusCode,
    ).toBe(201);
    const s = (await create({ name: "strict-host", source: JS_V1 })).json();
    const route = (host: string) =>
      h.call("POST", `/api/v1/admin/scripts/${s.id}/routes`, {
        path: `/p-${host}`,
        host_kind: "strict",
        host,
      });
    const refused = await route("theirs.test");
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error).toMatchObject({ code: "host_claimed_by_other_app", field: "host" });
    expect((await route("ours.test")).statusCode).toBe(201);
    expect((await route("nobody.test")).statusCode).toBe(201);
  });

  it("serves the SDK declarations openly", async () => {
    const res = await h.call("GET", "/api/v1/sdk/types.d.ts", undefined, null);
    expect(res.statusCode).toBe(200);
    expect(String(res.headers["content-type"])).toMatch(/typescript/);
    expect(res.body).toContain("declare const kv: Kv;");
    expect(res.body).toContain("collection(name: string): KvCollection;");
  });
});
