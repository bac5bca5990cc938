import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkUrl, HttpRequestError, isAllowedAddress } from "../../src/sdk/http.js";
import { type Harness, startHarness } from "../control/harness.js";

const PURE = `export default async function () {
  const out = {};
  const bytes = new TextEncoder().encode("héllo €😀");
  out.encoded = Array.from(bytes);
  out.decoded = new TextDecoder().decode(bytes);
  out.b64 = btoa("hello");
  out.unb64 = atob("aGVsbG8=");
  const u = new URL("/a/./b/../c?x=1&y=two%20words#frag", "https://Example.com:443/base/");
  out.url = { href: u.href, host: u.host, path: u.pathname, x: u.searchParams.get("x"), y: u.searchParams.get("y"), hash: u.hash, origin: u.origin };
  u.searchParams.set("z", "a b");
  out.urlAfterSet = u.search;
  out.rel = new URL("c/../d?q", "https://x.com/base/f").href;
  let bad = null;
  try { new URL("not a url"); } catch (e) { bad = e.name; }
  out.badUrl = bad;
  out.qs = new URLSearchParams({ a: "1", b: "x&y" }).toString();
  const h = new Headers({ "X-One": "1" });
  h.append("x-one", "2");
  out.headers = [...h];
  const res = Response.json({ ok: true }, { status: 201 });
  out.response = { status: res.status, ok: res.ok, type: res.headers.get("content-type"), body: await res.json() };
  const req = new Request("https://example.com/p", { method: "post", body: "hi" });
  out.request = { method: req.method, text: await req.text(), type: req.headers.get("content-type") };
  // A string body reads back as text and as its UTF-8 bytes; a lone surrogate as U+FFFD.
  const r2 = new Response("é€");
  const r3 = r2.clone();
  out.bodies = {
    bytes: Array.from(new Uint8Array(await r2.arrayBuffer())),
    text: await r3.text(),
    lone: await new Response("a\ud800b").text(),
    used: r2.bodyUsed,
  };
  out.uuid = crypto.randomUUID();
  out.random = crypto.getRandomValues(new Uint8Array(8)).length;
  const src = { d: new Date(0), m: new Map([[1, { a: [1, 2] }]]), s: new Set([1]) };
  src.self = src;
  const c = structuredClone(src);
  out.clone = { same: c === src, cyclic: c.self === c, date: c.d.getTime(), map: c.m.get(1).a, set: c.s.has(1) };
  let cloneErr = null;
  try { structuredClone({ f() {} }); } catch (e) { cloneErr = String(e.message).slice(0, 14); }
  out.cloneErr = cloneErr;
  return out;
}`;

describe("in-sandbox web APIs", () => {
  let h: Harness;
  let open: Harness;
  let server: Server;
  let port: number;
  let scriptOf: (hh: Harness) => Promise<string>;

  const run = async (hh: Harness, id: string, source: string) =>
    (
      await hh.call("POST", `/api/v1/admin/scripts/${id}:run`, {
        source,
        request: { method: "GET", path: "/" },
      })
    ).json();

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === "/hop") {
        res.writeHead(302, { location: `http://127.0.0.1:${port}/json` });
        return res.end();
      }
      let body = "";
      req.on("data", (c) => {
        body += c;
      });
      req.on("end", () => {
        res.writeHead(200, { "content-type": "application/json", "x-seen": req.headers["x-demo"] ?? "" });
        res.end(JSON.stringify({ method: req.method, url: req.url, body }));
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as AddressInfo).port;
    h = await startHarness();
    open = await startHarness({ PLATFORM_HTTP_ALLOW_PRIVATE: "true" });
    const made = new Map<Harness, string>();
    scriptOf = async (hh) => {
      const known = made.get(hh);
      if (known) return known;
      const app = (await hh.call("POST", "/api/v1/admin/apps", { slug: "web" })).json().id;
      const id = (
        await hh.call("POST", "/api/v1/admin/scripts", {
          app_id: app,
          name: "web",
          source: "export default () => 1;",
        })
      ).json().id;
      made.set(hh, id);
      return id;
    };
  });
  afterAll(async () => {
    await h.close();
    await open.close();
    await new Promise((r) => server.close(r));
  });

  it("encoders, base64, URL, Headers, Request, Response, crypto and structuredClone behave like the web's", async () => {
    const r = await run(h, await scriptOf(h), PURE);
    expect(r.error).toBeNull();
    const b = r.body;
    expect(b.encoded).toEqual([...Buffer.from("héllo €😀")]);
    expect(b.decoded).toBe("héllo €😀");
    expect(b.b64).toBe("aGVsbG8=");
    expect(b.unb64).toBe("hello");
    expect(b.url).toEqual({
      href: "https://example.com/a/c?x=1&y=two%20words#frag",
      host: "example.com",
      path: "/a/c",
      x: "1",
      y: "two words",
      hash: "#frag",
      origin: "https://example.com",
    });
    expect(b.urlAfterSet).toBe("?x=1&y=two+words&z=a+b");
    expect(b.rel).toBe("https://x.com/base/d?q");
    expect(b.badUrl).toBe("TypeError");
    expect(b.qs).toBe("a=1&b=x%26y");
    expect(b.headers).toEqual([["x-one", "1, 2"]]);
    expect(b.response).toEqual({ status: 201, ok: true, type: "application/json", body: { ok: true } });
    expect(b.request).toEqual({ method: "POST", text: "hi", type: "text/plain;charset=UTF-8" });
    expect(b.bodies).toEqual({ bytes: [...Buffer.from("é€")], text: "é€", lone: "a\ufffdb", used: true });
    expect(b.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(b.random).toBe(8);
    expect(b.clone).toEqual({ same: false, cyclic: true, date: 0, map: [1, 2], set: true });
    expect(b.cloneErr).toBe("DataCloneError");
  });

  it("fetch goes through the SDK's checked path: private addresses refused, redirect hops followed", async () => {
    const denied = await run(
      h,
      await scriptOf(h),
      `export default async () => {
        const out = [];
        for (const u of ["http://127.0.0.1:${port}/json", "http://[::7f00:1]:${port}/", "http://[::ffff:127.0.0.1]:${port}/"]) {
          try { await fetch(u); out.push("fetched"); } catch (e) { out.push(e.name + ": " + e.message); }
        }
        return out;
      }`,
    );
    expect(denied.body).toHaveLength(3);
    for (const line of denied.body) expect(line).toMatch(/^TypeError: fetch failed: .*blocked_address/);

    const ok = await run(
      open,
      await scriptOf(open),
      `export default async () => {
        const r = await fetch("http://127.0.0.1:${port}/hop");
        const p = await fetch(new Request("http://127.0.0.1:${port}/post", { method: "POST", body: JSON.stringify({ a: 1 }), headers: { "x-demo": "yes" } }));
        return { status: r.status, ok: r.ok, json: await r.json(), post: await p.json(), seen: p.headers.get("x-seen") };
      }`,
    );
    expect(ok.error).toBeNull();
    expect(ok.body).toEqual({
      status: 200,
      ok: true,
      json: { method: "GET", url: "/json", body: "" },
      post: { method: "POST", url: "/post", body: '{"a":1}' },
      seen: "yes",
    });

    // A body travels as text both ways, not through an encoding loop in the interpreter: half a
    // megabyte sent and read back within an operation budget a loop over its characters exceeds.
    const id = (
      await open.call("POST", "/api/v1/admin/scripts", {
        app_id: (await open.call("GET", `/api/v1/admin/scripts/${await scriptOf(open)}`)).json().app_id,
        name: "big-body",
        source: "export default () => 1;",
        sandbox: { max_operations: 200_000 },
      })
    ).json().id;
    const big = await run(
      open,
      id,
      `export default async () => {
        const p = await fetch("http://127.0.0.1:${port}/post", { method: "POST", body: "x".repeat(500000) });
        return (await p.json()).body.length;
      }`,
    );
    expect([big.error, big.body]).toEqual([null, 500000]);
  });

  it("setTimeout waits on the host and clearTimeout cancels", async () => {
    const id = await scriptOf(h);
    const pending = h.call("POST", `/api/v1/admin/scripts/${id}:run`, {
      source: `export default async () => {
        const order = [];
        // real-time: the sandbox's own timers under test (they run on the host's clock).
        const cancelled = setTimeout(() => order.push("cancelled"), 50);
        clearTimeout(cancelled);
        // real-time: as above.
        await new Promise((r) => setTimeout(() => { order.push("timer"); r(); }, 100));
        queueMicrotask(() => order.push("micro"));
        await null;
        return order;
      }`,
      request: { method: "GET", path: "/" },
    });
    let done = false;
    void pending.then(() => {
      done = true;
    });
    for (let i = 0; i < 200 && !done; i++) {
      await h.clock.advance(20);
      // real-time: scripts run in worker threads on the wall clock; a short real pause lets their
      // messages in before the fake clock moves again (the loop ends on the condition, not the pause).
      await new Promise((r) => setTimeout(r, 5));
    }
    const r = (await pending).json();
    expect(r.error).toBeNull();
    expect(r.body).toEqual(["timer", "micro"]);
  });

  it("the deny-list covers IPv4-compatible IPv6", () => {
    expect(isAllowedAddress("::7f00:1")).toBe(false);
    expect(isAllowedAddress("::a9fe:a9fe")).toBe(false);
    expect(isAllowedAddress("::0808:0808")).toBe(false);
    expect(isAllowedAddress("2606:4700::1111")).toBe(true);
    expect(() => checkUrl("http://[::7f00:1]/", false)).toThrow(HttpRequestError);
  });
});
