import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pathAndQuery } from "../../src/http/routes/script-requests.js";
import { type Harness, startHarness } from "../control/harness.js";

describe("pathAndQuery: a plain path skips URL parsing and reads as URL would", () => {
  it("agrees with new URL() for plain and for tricky targets", () => {
    const targets = [
      "/",
      "/hello",
      "/a/b-c_d~e/f.g",
      "/a//b",
      "/a/./b",
      "/a/../b",
      "/.",
      "/a/..",
      "/.hidden",
      "//host/path",
      "/a%20b/c",
      "/a b",
      "/ü",
      "/a?",
      "/a?x=1&x=2&y",
      "/a?__proto__=p&constructor=c",
      "/a#frag",
      "/a\\b",
      "/a?e=%F0%9F%98%80&plus=a+b",
    ];
    for (const t of targets) {
      const url = new URL(t, "http://x");
      const query: Record<string, string> = {};
      for (const [k, v] of url.searchParams)
        Object.defineProperty(query, k, { value: v, enumerable: true, writable: true, configurable: true });
      const got = pathAndQuery(t);
      expect({ t, path: got.path }).toEqual({ t, path: url.pathname });
      expect(Object.entries(got.query)).toEqual(Object.entries(query));
    }
  });
});

/**
 * A sync request runs in the process that received it, with the request as the route decoded it
 * (not parsed back from the outbox row's JSON); an async one runs from the row. The script must
 * not be able to tell them apart.
 */
describe("ctx.request: a sync run sees what an async run of the same request sees", () => {
  let h: Harness;
  const ECHO = `export default async (ctx) => {
    const r = ctx.request;
    const view = {
      method: r.method,
      path: r.path.replace(/^\\/(s|a)\\//, "/"),
      query: Object.entries(r.query),
      params: r.params,
      rest: r.rest,
      body: r.body instanceof Uint8Array ? { bytes: Array.from(r.body) } : r.body,
      probe: r.headers["x-probe"] ?? null,
      type: r.headers["content-type"] ?? null,
      request_id: typeof ctx.request_id,
      keys: Object.keys(r).join(","),
      ctxKeys: Object.keys(ctx).join(","),
    };
    if (r.headers["x-store"]) await kv.collection("views").set(r.headers["x-store"], view);
    return view;
  }`;
  const inject = (method: string, url: string, headers: Record<string, string>, payload?: string | Buffer) =>
    h.built.app.inject({
      method: method as "GET",
      url,
      headers: { host: "rv.test", "x-probe": "p1", ...headers },
      ...(payload !== undefined ? { payload } : {}),
    });

  beforeAll(async () => {
    h = await startHarness();
    const appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "rv" })).json().id;
    await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "rv.test" });
    const s = await h.call("POST", "/api/v1/admin/scripts", {
      app_id: appId,
      name: "echo",
      kind: "endpoint",
      source: ECHO,
    });
    for (const [path, dispatch_mode] of [
      ["/s/*", "sync"],
      ["/a/*", "async"],
    ])
      await h.call("POST", `/api/v1/admin/scripts/${s.json().id}/routes`, {
        path,
        method: "ANY",
        dispatch_mode,
        host_kind: "any",
      });
  });
  afterAll(async () => {
    await h?.close();
  });

  const cases: [string, string, Record<string, string>, (string | Buffer)?][] = [
    ["GET", "/plain", {}],
    ["GET", "/x%20y/./z/../w?q=1&q=2&__proto__=p&e=%F0%9F%98%80&plus=a+b", {}],
    [
      "POST",
      "/json?z=",
      { "content-type": "application/json" },
      '{"a":[1,2,{"b":null}],"n":1.5,"s":"\\u00e9"}',
    ],
    ["POST", "/bytes", { "content-type": "application/octet-stream" }, Buffer.from([0, 1, 2, 255])],
    ["POST", "/text", { "content-type": "text/plain; charset=utf-8" }, "héllo\nwörld"],
  ];

  it("gives equal views for JSON, bytes, text, queries and odd paths", async () => {
    for (const [i, [method, path, headers, payload]] of cases.entries()) {
      const sync = await inject(method, `/s${path}`, headers, payload);
      expect(sync.statusCode).toBe(200);
      const accepted = await inject(method, `/a${path}`, { ...headers, "x-store": `k${i}` }, payload);
      expect(accepted.statusCode).toBe(202);
      await h.clock.advance(1000);
      await h.built.engine.runtime.dispatcher.idle();
      const row = await h.built.ctx.database.db
        .selectFrom("kv_entries")
        .select("value")
        .where("collection", "=", "views")
        .where("key", "=", `k${i}`)
        .executeTakeFirstOrThrow();
      expect({ path, view: sync.json() }).toEqual({ path, view: JSON.parse(row.value) });
    }
  });
});
