import { readdirSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH, CONNECTOR, type Harness, startHarness } from "./helpers.js";

const FILE = "/api/files/6543210fedcba98765432100/worksheet.pdf";

describe("file-mirror stream", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ env: { MCP_CONNECTOR_TOKEN: CONNECTOR } });
    await h.listen();
  });
  afterAll(async () => h.close());

  it("streams the portal's download through the bridge, storing nothing", async () => {
    const before = readdirSync(h.dataDir);
    const res = await fetch(h.url + FILE, { headers: { authorization: `Bearer ${AUTH}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/pdf");
    expect(res.headers.get("content-disposition")).toBe('inline; filename="worksheet.pdf"');
    expect(res.headers.get("set-cookie")).toBeNull();
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.equals(h.portal.data.files["6543210fedcba98765432100"]?.body as Buffer)).toBe(true);
    const upstream = h.portal.requests.at(-1);
    expect(upstream).toMatchObject({
      method: "GET",
      path: "/api/v3/file/download/6543210fedcba98765432100/worksheet.pdf",
      authorization: `Bearer ${h.token}`,
    });
    expect(readdirSync(h.dataDir)).toEqual(before);
  });

  it("passes a Range request through (206 with Content-Range; 416 when unsatisfiable)", async () => {
    const full = h.portal.data.files["6543210fedcba98765432100"]?.body as Buffer;
    const res = await fetch(h.url + FILE, {
      headers: { authorization: `Bearer ${AUTH}`, range: "bytes=100-199" },
    });
    expect(res.status).toBe(206);
    expect(res.headers.get("content-range")).toBe(`bytes 100-199/${full.length}`);
    expect(Buffer.from(await res.arrayBuffer()).equals(full.subarray(100, 200))).toBe(true);
    const bad = await fetch(h.url + FILE, {
      headers: { authorization: `Bearer ${AUTH}`, range: "bytes=999999-" },
    });
    expect(bad.status).toBe(416);
  });

  it("needs MCP_AUTH_TOKEN and maps upstream answers", async () => {
    expect((await fetch(h.url + FILE)).status).toBe(401);
    expect((await fetch(h.url + FILE, { headers: { "x-api-key": CONNECTOR } })).status).toBe(403);
    const missing = await fetch(`${h.url}/api/files/6543210fedcba98765432100/other.pdf`, {
      headers: { authorization: `Bearer ${AUTH}` },
    });
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("not_found");
    h.portal.failNext = { count: 1, status: 503 };
    const down = await fetch(h.url + FILE, { headers: { authorization: `Bearer ${AUTH}` } });
    expect(down.status).toBe(503);
    expect(down.headers.get("retry-after")).toBeTruthy();
  });
});
