import { describe, expect, it } from "vitest";
import {
  compile,
  conflicts,
  parseHost,
  parseMethod,
  parsePath,
  type RoutePattern,
} from "../../src/control/route-patterns.js";
import { buildSnapshot, matchIn, type RouteView } from "../../src/control/route-table.js";

const APP = "app-1";
let seq = 0;

/** `"GET strict:api.example.com /users/:id"` → a stored route. */
function route(spec: string, id?: string): RouteView {
  const [method, hostSpec, path] = spec.split(" ") as [string, string, string];
  const [kind, host] = hostSpec.includes(":") ? (hostSpec.split(":") as [string, string]) : [hostSpec, null];
  const hostKind = kind as RouteView["host_kind"];
  const parsed = parsePath(path);
  seq += 1;
  return {
    id: id ?? spec,
    app_id: APP,
    script_id: `script:${id ?? spec}`,
    host_kind: hostKind,
    host: parseHost(hostKind, host),
    path_kind: parsed.path_kind,
    path: parsed.path,
    method: parseMethod(method),
    dispatch_mode: "sync",
    created_at: new Date(Date.UTC(2026, 0, 1, 0, 0, seq)).toISOString(),
  };
}

const DOMAINS = [
  { app_id: APP, host: "example.com", kind: "exact" },
  { app_id: APP, host: "api.example.com", kind: "exact" },
  { app_id: APP, host: "*.example.com", kind: "wildcard" },
  { app_id: APP, host: "*.eu.example.com", kind: "wildcard" },
  { app_id: "app-2", host: "other.test", kind: "exact" },
];

interface MatchCase {
  name: string;
  routes: string[];
  request: [host: string, method: string, path: string];
  /** The winning route spec, or null for no match. */
  expect: string | null;
  params?: Record<string, string>;
  rest?: string;
}

const MATCH_CASES: MatchCase[] = [
  {
    name: "exact matches its path",
    routes: ["GET any /greet"],
    request: ["example.com", "GET", "/greet"],
    expect: "GET any /greet",
  },
  {
    name: "exact does not match a longer path",
    routes: ["GET any /greet"],
    request: ["example.com", "GET", "/greet/x"],
    expect: null,
  },
  {
    name: "exact does not match with a trailing slash",
    routes: ["GET any /greet"],
    request: ["example.com", "GET", "/greet/"],
    expect: null,
  },
  {
    name: "query string is ignored",
    routes: ["GET any /greet"],
    request: ["example.com", "GET", "/greet?x=1"],
    expect: "GET any /greet",
  },
  {
    name: "prefix matches below it",
    routes: ["GET any /greet/*"],
    request: ["example.com", "GET", "/greet/a/b"],
    expect: "GET any /greet/*",
    rest: "a/b",
  },
  {
    name: "prefix does not match the bare path",
    routes: ["GET any /greet/*"],
    request: ["example.com", "GET", "/greet"],
    expect: null,
  },
  {
    name: "prefix matches the path with a trailing slash, empty rest",
    routes: ["GET any /greet/*"],
    request: ["example.com", "GET", "/greet/"],
    expect: "GET any /greet/*",
    rest: "",
  },
  {
    name: "param captures one whole segment",
    routes: ["GET any /users/:id"],
    request: ["example.com", "GET", "/users/42"],
    expect: "GET any /users/:id",
    params: { id: "42" },
  },
  {
    name: "param does not capture two segments",
    routes: ["GET any /users/:id"],
    request: ["example.com", "GET", "/users/42/x"],
    expect: null,
  },
  {
    name: "param does not capture an empty segment",
    routes: ["GET any /users/:id"],
    request: ["example.com", "GET", "/users/"],
    expect: null,
  },
  {
    name: "param values are percent-decoded",
    routes: ["GET any /users/:id"],
    request: ["example.com", "GET", "/users/a%20b"],
    expect: "GET any /users/:id",
    params: { id: "a b" },
  },
  {
    name: "two params",
    routes: ["GET any /a/:x/b/:y"],
    request: ["example.com", "GET", "/a/1/b/2"],
    expect: "GET any /a/:x/b/:y",
    params: { x: "1", y: "2" },
  },
  {
    name: "exact before param",
    routes: ["GET any /users/:id", "GET any /users/me"],
    request: ["example.com", "GET", "/users/me"],
    expect: "GET any /users/me",
  },
  {
    name: "exact before prefix",
    routes: ["GET any /users/*", "GET any /users/me"],
    request: ["example.com", "GET", "/users/me"],
    expect: "GET any /users/me",
  },
  {
    name: "param before prefix on equal leading literals",
    routes: ["GET any /users/*", "GET any /users/:id"],
    request: ["example.com", "GET", "/users/7"],
    expect: "GET any /users/:id",
    params: { id: "7" },
  },
  {
    name: "prefix still serves what the param cannot",
    routes: ["GET any /users/*", "GET any /users/:id"],
    request: ["example.com", "GET", "/users/7/posts"],
    expect: "GET any /users/*",
    rest: "7/posts",
  },
  {
    name: "a param of another length leaves the path to the prefix",
    routes: ["GET any /a/:x", "GET any /a/b/*"],
    request: ["example.com", "GET", "/a/b/c"],
    expect: "GET any /a/b/*",
    rest: "c",
  },
  {
    name: "the bare path goes to the param, not the prefix",
    routes: ["GET any /a/:x", "GET any /a/b/*"],
    request: ["example.com", "GET", "/a/b"],
    expect: "GET any /a/:x",
    params: { x: "b" },
  },
  {
    name: "more leading literals win: deeper prefix over shallow param",
    routes: ["GET any /a/:x/:y", "GET any /a/b/*"],
    request: ["example.com", "GET", "/a/b/c"],
    expect: "GET any /a/b/*",
    rest: "c",
  },
  {
    name: "more leading literals win among params",
    routes: ["GET any /a/:x/c", "GET any /:p/b/c"],
    request: ["example.com", "GET", "/a/b/c"],
    expect: "GET any /a/:x/c",
    params: { x: "b" },
  },
  {
    name: "longest prefix wins",
    routes: ["GET any /*", "GET any /docs/*", "GET any /docs/api/*"],
    request: ["example.com", "GET", "/docs/api/x"],
    expect: "GET any /docs/api/*",
    rest: "x",
  },
  {
    name: "shorter prefix serves the rest",
    routes: ["GET any /*", "GET any /docs/*", "GET any /docs/api/*"],
    request: ["example.com", "GET", "/docs/guide"],
    expect: "GET any /docs/*",
    rest: "guide",
  },
  {
    name: "root prefix catches everything else",
    routes: ["GET any /*", "GET any /docs/*"],
    request: ["example.com", "GET", "/elsewhere/x"],
    expect: "GET any /*",
    rest: "elsewhere/x",
  },
  {
    name: "a literal-first prefix beats a param-first route",
    routes: ["GET any /:p/b/c", "GET any /a/*"],
    request: ["example.com", "GET", "/a/b/c"],
    expect: "GET any /a/*",
    rest: "b/c",
  },
  {
    name: "param-first route serves other first segments",
    routes: ["GET any /:p/b/c", "GET any /a/*"],
    request: ["example.com", "GET", "/z/b/c"],
    expect: "GET any /:p/b/c",
    params: { p: "z" },
  },
  {
    name: "root param before root prefix",
    routes: ["GET any /*", "GET any /:x"],
    request: ["example.com", "GET", "/foo"],
    expect: "GET any /:x",
    params: { x: "foo" },
  },
  {
    name: "root prefix serves the root path",
    routes: ["GET any /*", "GET any /:x"],
    request: ["example.com", "GET", "/"],
    expect: "GET any /*",
    rest: "",
  },
  {
    name: "method must match",
    routes: ["POST any /greet"],
    request: ["example.com", "GET", "/greet"],
    expect: null,
  },
  {
    name: "ANY matches every method",
    routes: ["ANY any /greet"],
    request: ["example.com", "DELETE", "/greet"],
    expect: "ANY any /greet",
  },
  {
    name: "HEAD is served by a GET route",
    routes: ["GET any /greet"],
    request: ["example.com", "HEAD", "/greet"],
    expect: "GET any /greet",
  },
  {
    name: "routes differing by method coexist",
    routes: ["GET any /greet", "POST any /greet"],
    request: ["example.com", "POST", "/greet"],
    expect: "POST any /greet",
  },
  {
    name: "strict bucket before any",
    routes: ["GET any /x", "GET strict:api.example.com /x"],
    request: ["api.example.com", "GET", "/x"],
    expect: "GET strict:api.example.com /x",
  },
  {
    name: "strict bucket applies only to its host",
    routes: ["GET any /x", "GET strict:api.example.com /x"],
    request: ["example.com", "GET", "/x"],
    expect: "GET any /x",
  },
  {
    name: "strict host ignores the port and case",
    routes: ["GET strict:api.example.com /x"],
    request: ["API.Example.com:8080", "GET", "/x"],
    expect: "GET strict:api.example.com /x",
  },
  {
    name: "wildcard bucket before any",
    routes: ["GET any /x", "GET wildcard:*.example.com /x"],
    request: ["a.example.com", "GET", "/x"],
    expect: "GET wildcard:*.example.com /x",
  },
  {
    name: "strict before wildcard",
    routes: ["GET wildcard:*.example.com /x", "GET strict:api.example.com /x"],
    request: ["api.example.com", "GET", "/x"],
    expect: "GET strict:api.example.com /x",
  },
  {
    name: "longer wildcard suffix first",
    routes: ["GET wildcard:*.example.com /x", "GET wildcard:*.eu.example.com /x"],
    request: ["a.eu.example.com", "GET", "/x"],
    expect: "GET wildcard:*.eu.example.com /x",
  },
  {
    name: "wildcard matches multi-level subdomains",
    routes: ["GET wildcard:*.example.com /x"],
    request: ["a.b.c.example.com", "GET", "/x"],
    expect: "GET wildcard:*.example.com /x",
  },
  {
    name: "wildcard does not match the bare domain",
    routes: ["GET wildcard:*.example.com /x"],
    request: ["example.com", "GET", "/x"],
    expect: null,
  },
  {
    name: "falls through a strict bucket whose paths do not match",
    routes: ["GET strict:api.example.com /y", "GET any /x"],
    request: ["api.example.com", "GET", "/x"],
    expect: "GET any /x",
  },
  {
    name: "falls through wildcard buckets in order",
    routes: ["GET wildcard:*.eu.example.com /y", "GET wildcard:*.example.com /x"],
    request: ["a.eu.example.com", "GET", "/x"],
    expect: "GET wildcard:*.example.com /x",
  },
  {
    name: "bucket beats path kind: strict prefix over any exact",
    routes: ["GET any /x", "GET strict:api.example.com /*"],
    request: ["api.example.com", "GET", "/x"],
    expect: "GET strict:api.example.com /*",
    rest: "x",
  },
  {
    name: "unclaimed host matches nothing",
    routes: ["GET any /x"],
    request: ["nobody.test", "GET", "/x"],
    expect: null,
  },
  {
    name: "another app's host does not see this app's routes",
    routes: ["GET any /x"],
    request: ["other.test", "GET", "/x"],
    expect: null,
  },
];

describe("route precedence (seed, table-driven)", () => {
  it.each(MATCH_CASES)("$name", (c) => {
    const routes = c.routes.map((r) => route(r));
    const snap = buildSnapshot(DOMAINS, routes);
    const m = matchIn(snap, c.request[0], c.request[1], c.request[2]);
    if (c.expect === null) {
      expect(m).toBeNull();
      return;
    }
    expect(m?.route.id).toBe(c.expect);
    expect(m?.app_id).toBe(APP);
    expect(m?.params).toEqual(c.params ?? {});
    expect(m?.rest).toBe(c.rest ?? "");
  });
});

interface ConflictCase {
  a: string;
  b: string;
  conflict: boolean;
}

const CONFLICT_CASES: ConflictCase[] = [
  { a: "GET any /greet", b: "GET any /greet", conflict: true },
  { a: "GET any /greet", b: "GET any /greet2", conflict: false },
  { a: "GET any /greet", b: "POST any /greet", conflict: false },
  { a: "GET any /greet", b: "ANY any /greet", conflict: true },
  { a: "GET any /greet", b: "GET strict:api.example.com /greet", conflict: false },
  { a: "GET strict:api.example.com /greet", b: "GET strict:api.example.com /greet", conflict: true },
  { a: "GET strict:api.example.com /greet", b: "GET strict:www.example.com /greet", conflict: false },
  { a: "GET wildcard:*.example.com /g", b: "GET wildcard:*.example.com /g", conflict: true },
  { a: "GET wildcard:*.example.com /g", b: "GET wildcard:*.eu.example.com /g", conflict: false },
  { a: "GET any /greet/*", b: "GET any /greet/*", conflict: true },
  { a: "GET any /greet/*", b: "GET any /greet/x/*", conflict: false },
  { a: "GET any /greet/*", b: "GET any /greet", conflict: false },
  { a: "GET any /greet/*", b: "GET any /greet/:id", conflict: false },
  { a: "GET any /users/:id", b: "GET any /users/:name", conflict: true },
  { a: "GET any /users/:id", b: "GET any /users/me", conflict: false },
  { a: "GET any /users/:id", b: "GET any /users/:id/posts", conflict: false },
  { a: "GET any /a/:x/c", b: "GET any /a/b/:y", conflict: true },
  { a: "GET any /a/:x", b: "GET any /b/:y", conflict: false },
  { a: "GET any /a/:x/c", b: "GET any /a/:y/d", conflict: false },
  { a: "GET any /:x/:y", b: "GET any /a/:z", conflict: true },
  { a: "POST any /users/:id", b: "GET any /users/:id", conflict: false },
  { a: "ANY any /users/:id", b: "DELETE any /users/:x", conflict: true },
];

describe("route conflicts (seed, table-driven)", () => {
  it.each(CONFLICT_CASES)("$a vs $b → $conflict", (c) => {
    const a = compile(route(c.a, `a-${c.a}`) as RoutePattern);
    const b = compile(route(c.b, `b-${c.b}`) as RoutePattern);
    expect(conflicts(a, b)).toBe(c.conflict);
    expect(conflicts(b, a)).toBe(c.conflict);
  });
});

describe("route pattern validation", () => {
  it.each([
    ["/greet", "exact", "/greet"],
    ["/greet/*", "prefix", "/greet/"],
    ["/*", "prefix", "/"],
    ["/users/:id", "param", "/users/:id"],
    ["/", "exact", "/"],
  ])("%s is a %s route stored as %s", (input, kind, stored) => {
    expect(parsePath(input)).toMatchObject({ path_kind: kind, path: stored });
  });

  it.each([
    ["/api/x", "reserved_path"],
    ["/api/*", "reserved_path"],
    ["/api", "reserved_path"],
    ["/admin/x", "reserved_path"],
    ["/ADMIN/x", "reserved_path"],
    ["/healthz", "reserved_path"],
    ["/version", "reserved_path"],
    ["/version/x", "reserved_path"],
    ["greet", "invalid_route"],
    ["/a//b", "invalid_route"],
    ["/a/*/b", "invalid_route"],
    ["/a*", "invalid_route"],
    ["/a/", "invalid_route"],
    ["/a/:", "invalid_route"],
    ["/a/:x/:x", "invalid_route"],
    ["/a/:x/*", "invalid_route"],
    ["/a?b=1", "invalid_route"],
  ])("%s is refused with %s", (input, code) => {
    expect(() => parsePath(input)).toThrow(expect.objectContaining({ status: 422, code }));
  });

  it("checks hosts per host kind", () => {
    expect(parseHost("any", null)).toBeNull();
    expect(() => parseHost("any", "example.com")).toThrow(expect.objectContaining({ status: 422 }));
    expect(parseHost("strict", "API.example.com")).toBe("api.example.com");
    expect(() => parseHost("strict", "*.example.com")).toThrow(expect.objectContaining({ status: 422 }));
    expect(() => parseHost("strict", null)).toThrow(expect.objectContaining({ status: 422 }));
    expect(parseHost("wildcard", "*.Example.com")).toBe("*.example.com");
    expect(() => parseHost("wildcard", "*.com")).toThrow(expect.objectContaining({ status: 422 }));
    expect(() => parseHost("wildcard", "a.*.com")).toThrow(expect.objectContaining({ status: 422 }));
    expect(parseMethod("get")).toBe("GET");
    expect(() => parseMethod("FETCH")).toThrow(expect.objectContaining({ status: 422 }));
  });
});
