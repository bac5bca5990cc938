import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_APP_ID, HELLO_ROUTE_ID } from "../../src/db/migrations/0001_control_plane.js";
import { type Harness, startHarness } from "./harness.js";

const ENDPOINT = "export default function (ctx) { return ctx.request.params; }";

describe("routes admin API and the live route table", () => {
  let h: Harness;
  let appId: string;
  let scriptId: string;
  let otherScript: string;

  beforeAll(async () => {
    h = await startHarness();
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "web" })).json().id;
    await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "web.test" });
    await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "*.web.test" });
    scriptId = (
      await h.call("POST", "/api/v1/admin/scripts", { app_id: appId, name: "a", source: ENDPOINT })
    ).json().id;
    otherScript = (
      await h.call("POST", "/api/v1/admin/scripts", { app_id: appId, name: "b", source: ENDPOINT })
    ).json().id;
  });
  afterAll(async () => h.close());

  const add = (script: string, body: Record<string, unknown>) =>
    h.call("POST", `/api/v1/admin/scripts/${script}/routes`, body);

  it("creates routes of each kind, stores prefixes with a trailing slash, lists them", async () => {
    const exact = await add(scriptId, { path: "/greet", method: "get" });
    expect(exact.statusCode).toBe(201);
    expect(exact.json()).toMatchObject({
      app_id: appId,
      script_id: scriptId,
      host_kind: "any",
      host: null,
      path_kind: "exact",
      path: "/greet",
      method: "GET",
      dispatch_mode: "sync",
    });
    const prefix = (await add(scriptId, { path: "/greet/*", method: "GET", dispatch_mode: "async" })).json();
    expect(prefix).toMatchObject({ path_kind: "prefix", path: "/greet/", dispatch_mode: "async" });
    const param = (
      await add(scriptId, { path: "/users/:id", host_kind: "strict", host: "api.web.test" })
    ).json();
    expect(param).toMatchObject({
      path_kind: "param",
      method: "ANY",
      host_kind: "strict",
      host: "api.web.test",
    });
    const list = (await h.call("GET", `/api/v1/admin/scripts/${scriptId}/routes`)).json();
    expect(list.items.map((r: { path: string }) => r.path)).toEqual(["/greet", "/greet/", "/users/:id"]);
  });

  it("accepts a consistent script_id and path_kind in the body, refuses inconsistent ones", async () => {
    const ok = await add(scriptId, {
      script_id: scriptId,
      path_kind: "prefix",
      path: "/body/*",
      method: "GET",
    });
    expect(ok.statusCode).toBe(201);
    const wrongKind = await add(scriptId, { path_kind: "exact", path: "/body2/*", method: "GET" });
    expect(wrongKind.statusCode).toBe(422);
    const wrongScript = await add(scriptId, { script_id: otherScript, path: "/body3", method: "GET" });
    expect(wrongScript.statusCode).toBe(422);
  });

  it("refuses reserved and invalid patterns with 422", async () => {
    for (const path of ["/api/x", "/admin/", "/admin/*", "/healthz", "/version", "nope", "/a//b"]) {
      const res = await add(scriptId, { path, method: "GET" });
      expect(res.statusCode, path).toBe(422);
    }
    expect((await add(scriptId, { path: "/x", method: "GET", host_kind: "strict" })).statusCode).toBe(422);
    expect((await add(scriptId, { path: "/x", method: "GET", dispatch_mode: "later" })).statusCode).toBe(422);
    expect((await add(scriptId, { path: "/x", method: "GET", extra: true })).statusCode).toBe(422);
  });

  it("answers a conflict with 409 and the conflicting route", async () => {
    const existing = (await h.call("GET", `/api/v1/admin/scripts/${scriptId}/routes`)).json().items[0];
    const res = await add(otherScript, { path: "/greet", method: "ANY" });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe("route_conflict");
    expect(res.json().error.conflict).toMatchObject({ id: existing.id, path: "/greet", method: "GET" });
    const param = await add(otherScript, {
      path: "/users/:name",
      host_kind: "strict",
      host: "api.web.test",
      method: "DELETE",
    });
    expect(param.statusCode).toBe(409);
    expect(param.json().error.conflict.path).toBe("/users/:id");
    // Same path in another host bucket or for another method is fine.
    expect((await add(otherScript, { path: "/greet", method: "POST" })).statusCode).toBe(201);
    expect((await add(otherScript, { path: "/users/:name", method: "GET" })).statusCode).toBe(201);
  });

  it("lets exactly one of two concurrent conflicting creates win", async () => {
    const [x, y] = await Promise.all([
      add(scriptId, { path: "/race/:a", method: "GET" }),
      add(otherScript, { path: "/race/:b", method: "GET" }),
    ]);
    expect([x.statusCode, y.statusCode].sort()).toEqual([201, 409]);
    const rows = await h.built.ctx.database.db
      .selectFrom("routes")
      .select("id")
      .where("path", "like", "/race/%")
      .execute();
    expect(rows).toHaveLength(1);
  });

  it("refuses routes to module scripts and unknown scripts", async () => {
    const mod = (
      await h.call("POST", "/api/v1/admin/scripts", {
        app_id: appId,
        name: "m",
        kind: "module",
        source: "export const x = 1;",
      })
    ).json();
    const res = await add(mod.id, { path: "/m", method: "GET" });
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe("invalid_target");
    expect((await add("019a0000-0000-7000-8000-0000000fffff", { path: "/m" })).statusCode).toBe(404);
  });

  it("pre-flights with routes:check", async () => {
    const clash = await h.call("POST", "/api/v1/admin/routes:check", {
      script_id: otherScript,
      path: "/greet",
      method: "GET",
    });
    expect(clash.statusCode).toBe(200);
    expect(clash.json()).toMatchObject({ ok: false, conflict: { path: "/greet", method: "GET" } });
    const free = await h.call("POST", "/api/v1/admin/routes:check", {
      app_id: "web",
      path: "/free/*",
      method: "GET",
    });
    expect(free.json()).toMatchObject({
      ok: true,
      conflict: null,
      route: { path_kind: "prefix", path: "/free/" },
    });
    const reserved = await h.call("POST", "/api/v1/admin/routes:check", { app_id: "web", path: "/api/x" });
    expect(reserved.statusCode).toBe(422);
  });

  it("matches synthetic requests with routes:match, host selecting the app", async () => {
    const match = (url: string, method = "GET") =>
      h.call("POST", "/api/v1/admin/routes:match", { url, method });
    const p = (await match("http://api.web.test/users/42?x=1")).json();
    expect(p).toMatchObject({
      matched: true,
      app_id: appId,
      params: { id: "42" },
      rest: "",
      route: { path: "/users/:id" },
    });
    const pre = (await match("http://web.test/greet/a/b")).json();
    expect(pre).toMatchObject({ matched: true, rest: "a/b", params: {}, route: { path_kind: "prefix" } });
    expect((await match("http://web.test/greet")).json().route.path_kind).toBe("exact");
    expect((await match("http://web.test/greet", "POST")).json().route.script_id).toBe(otherScript);
    expect((await match("http://web.test/nothing")).json()).toEqual({ matched: false });
    expect((await match("http://unknown.test/greet")).json()).toEqual({ matched: false });
    const hello = (await match("http://localhost:3002/hello")).json();
    expect(hello).toMatchObject({ matched: true, app_id: DEFAULT_APP_ID, route: { id: HELLO_ROUTE_ID } });
  });

  it("deletes a route and refreshes the live table", async () => {
    const route = (await add(scriptId, { path: "/temp", method: "GET" })).json();
    expect(h.built.ctx.routeTable.match("web.test", "GET", "/temp")?.route.id).toBe(route.id);
    expect((await h.call("DELETE", `/api/v1/admin/routes/${route.id}`)).statusCode).toBe(204);
    expect(h.built.ctx.routeTable.match("web.test", "GET", "/temp")).toBeNull();
    expect((await h.call("DELETE", `/api/v1/admin/routes/${route.id}`)).statusCode).toBe(404);
    // Deleting the script removes its routes from the table too.
    const s = (
      await h.call("POST", "/api/v1/admin/scripts", { app_id: appId, name: "gone", source: ENDPOINT })
    ).json();
    await add(s.id, { path: "/gone", method: "GET" });
    expect(h.built.ctx.routeTable.match("x.web.test", "GET", "/gone")?.script_id).toBe(s.id);
    await h.call("DELETE", `/api/v1/admin/scripts/${s.id}`);
    expect(h.built.ctx.routeTable.match("x.web.test", "GET", "/gone")).toBeNull();
  });
});
