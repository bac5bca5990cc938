import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkUrl, HttpRequestError, isAllowedAddress } from "../../src/sdk/http.js";
import { sdkHarness } from "./sdk-harness.js";

const APP = "0190a000-0000-7000-8000-0000000000aa";

describe("http SDK: deny-list", () => {
  it.each([
    "http://127.0.0.1/",
    "http://10.0.0.1/",
    "http://172.16.5.4/",
    "http://192.168.1.1/",
    "http://169.254.169.254/latest/meta-data/",
    "http://100.64.0.1/",
    "http://224.0.0.1/",
    "http://0.0.0.0/",
    "http://255.255.255.255/",
    "http://2130706433/",
    "http://0x7f.1/",
    "http://[::1]/",
    "http://[::]/",
    "http://[fd00:ec2::254]/",
    "http://[fe80::1]/",
    "http://[::ffff:127.0.0.1]/",
    "http://[::ffff:a00:1]/",
    "http://[2002:7f00:1::]/",
    "http://[64:ff9b::a00:1]/",
    "http://[ff02::1]/",
  ])("refuses the literal address in %s at parse time", (url) => {
    expect(() => checkUrl(url, false)).toThrow(new HttpRequestError("blocked_address"));
  });

  it("allows public addresses, and restricts schemes and ports", () => {
    expect(isAllowedAddress("93.184.216.34")).toBe(true);
    expect(isAllowedAddress("2606:4700::1111")).toBe(true);
    expect(() => checkUrl("https://93.184.216.34:8443/x", false)).not.toThrow();
    expect(() => checkUrl("http://example.com:8080/", false)).not.toThrow();
    expect(() => checkUrl("ftp://example.com/", false)).toThrow(new HttpRequestError("scheme_not_allowed"));
    expect(() => checkUrl("file:///etc/passwd", false)).toThrow(new HttpRequestError("scheme_not_allowed"));
    expect(() => checkUrl("http://example.com:22/", false)).toThrow(new HttpRequestError("port_not_allowed"));
    expect(() => checkUrl("http://example.com:25/", false)).toThrow(new HttpRequestError("port_not_allowed"));
    expect(() => checkUrl("not a url", false)).toThrow(new HttpRequestError("invalid_url"));
    expect(() => checkUrl("http://user:pw@example.com/", false)).toThrow(new HttpRequestError("invalid_url"));
  });

  describe("resolved names", () => {
    let h: Awaited<ReturnType<typeof sdkHarness>>;
    beforeAll(async () => {
      const table: Record<string, { address: string; family: number }[]> = {
        "internal.test": [{ address: "10.1.2.3", family: 4 }],
        "mixed.test": [
          { address: "93.184.216.34", family: 4 },
          { address: "127.0.0.1", family: 4 },
        ],
        "v6.test": [{ address: "fd12::1", family: 6 }],
      };
      h = await sdkHarness({
        resolver: async (host) => {
          const r = table[host];
          if (!r) throw Object.assign(new Error("ENOTFOUND"), { code: "ENOTFOUND" });
          return r;
        },
      });
    });
    afterAll(async () => {
      await h.cleanup();
    });

    it("checks every resolved address and names only the category", async () => {
      const v = await h.value(
        APP,
        `export default async () => {
          const out = [];
          for (const u of ["http://internal.test/", "http://mixed.test/", "https://v6.test/", "http://nowhere.test/", "http://10.0.0.8/", "gopher://x.test/"]) {
            try { await http.get(u); out.push("no error"); } catch (e) { out.push(e.message); }
          }
          return out;
        }`,
      );
      expect(v).toEqual([
        "http: request failed (blocked_address)",
        "http: request failed (blocked_address)",
        "http: request failed (blocked_address)",
        "http: request failed (dns_failure)",
        "http: request failed (blocked_address)",
        "http: request failed (scheme_not_allowed)",
      ]);
      expect(JSON.stringify(v)).not.toMatch(/10\.1\.2\.3|127\.0\.0\.1|fd12/);
    });
  });
});

describe("http SDK: requests (local server, allow-private on)", () => {
  let h: Awaited<ReturnType<typeof sdkHarness>>;
  let server: Server;
  let base = "";
  beforeAll(async () => {
    h = await sdkHarness({ allowPrivate: true });
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        const body = Buffer.concat(chunks).toString();
        if (req.url === "/json") {
          res.writeHead(200, { "content-type": "application/json", "x-test": "yes" });
          res.end(JSON.stringify({ hello: "world" }));
        } else if (req.url === "/echo") {
          res.writeHead(201, { "content-type": "application/json" });
          res.end(
            JSON.stringify({
              method: req.method,
              type: req.headers["content-type"],
              auth: req.headers.authorization,
              body,
            }),
          );
        } else if (req.url === "/missing") {
          res.writeHead(404, { "content-type": "text/plain" });
          res.end("nope");
        } else if (req.url === "/redirect") {
          res.writeHead(302, { location: "/json" });
          res.end();
        } else if (req.url === "/redirect-ftp") {
          res.writeHead(302, { location: "ftp://example.com/" });
          res.end();
        } else if (req.url === "/redirect-ssh") {
          res.writeHead(307, { location: "http://127.0.0.1:22/" });
          res.end();
        } else if (req.url === "/loop") {
          res.writeHead(302, { location: "/loop" });
          res.end();
        } else if (req.url === "/big") {
          res.writeHead(200, { "content-type": "text/plain" });
          res.end("x".repeat(5000));
        } else if (req.url === "/slow") {
          // real-time: an upstream that answers late, on the wall clock the outbound timeout uses.
          setTimeout(() => res.end("late"), 2000).unref();
        } else {
          res.writeHead(500);
          res.end();
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await h.cleanup();
  });

  it("returns status, headers, parsed JSON body and body_raw; non-2xx does not throw", async () => {
    const v = await h.value(
      APP,
      `export default async (ctx) => {
        const a = await http.get(ctx.base + "/json");
        const b = await http.post(ctx.base + "/echo", { x: 1 }, { headers: { Authorization: "Bearer t" } });
        const c = await http.put(ctx.base + "/echo", "plain");
        const d = await http.get(ctx.base + "/missing");
        const e = await http.get(ctx.base + "/redirect");
        const f = await http.head(ctx.base + "/json");
        return { a: [a.status, a.headers["x-test"], a.body, a.body_raw], b: [b.status, b.body], c: c.body.type, d: [d.status, d.body], e: [e.status, e.body], f: [f.status, f.body] };
      }`,
      { ctx: { base } },
    );
    expect(v).toEqual({
      a: [200, "yes", { hello: "world" }, '{"hello":"world"}'],
      b: [201, { method: "POST", type: "application/json", auth: "Bearer t", body: '{"x":1}' }],
      c: "text/plain; charset=utf-8",
      d: [404, "nope"],
      e: [200, { hello: "world" }],
      f: [200, null],
    });
  });

  it("re-checks every redirect hop, caps redirects, bytes and time, and rejects unknown options", async () => {
    const v = await h.value(
      APP,
      `export default async (ctx) => {
        const out = [];
        const tries = [
          () => http.get(ctx.base + "/redirect-ftp"),
          () => http.get(ctx.base + "/redirect-ssh"),
          () => http.get(ctx.base + "/loop"),
          () => http.get(ctx.base + "/big", null, { max_bytes: 1000 }),
          () => http.get(ctx.base + "/slow", null, { timeout_ms: 200 }),
          () => http.get(ctx.base + "/json", null, { retries: 3 }),
          () => http.get(ctx.base + "/json", { a: 1 }),
        ];
        for (const t of tries) { try { await t(); out.push("no error"); } catch (e) { out.push(e.message); } }
        return out;
      }`,
      { ctx: { base } },
    );
    expect(v).toEqual([
      "http: request failed (scheme_not_allowed)",
      "http: request failed (port_not_allowed)",
      "http: request failed (too_many_redirects)",
      "http: request failed (response_too_large)",
      "http: request failed (timeout)",
      "http.get: unknown option: retries",
      "http.get: GET requests cannot carry a body",
    ]);
  });
});
