import { afterEach, describe, expect, it } from "vitest";
import { AUTH, type Harness, PATH_SECRET, startHarness } from "./helpers.js";

// GET / tells an operator what the bridge is and whether it has a token, and nothing secret.
let h: Harness | null = null;
afterEach(async () => {
  await h?.close();
  h = null;
});

describe("status page at /", () => {
  it("names the service and its version, says whether a token is present, links to /token", async () => {
    h = await startHarness({ env: { MCP_PATH_SECRET: PATH_SECRET } });
    const res = await h.built.app.inject({ url: "/", headers: { host: "127.0.0.1" } });
    expect(res.statusCode).toBe(200);
    expect(res.headers["content-type"]).toMatch(/^text\/html/);
    expect(res.body).toContain("<h1>portal-bridge</h1>");
    expect(res.body).toMatch(/Portal token<\/dt><dd class="ok">present, expires \d{4}-/);
    expect(res.body).toContain('<a href="/token">');
    for (const secret of [AUTH, PATH_SECRET, h.token as string]) expect(res.body).not.toContain(secret);
    const de = await h.built.app.inject({
      url: "/",
      headers: { host: "127.0.0.1", "accept-language": "de-DE" },
    });
    expect(de.body).toContain("Token einfügen oder ersetzen");
    // The start-up banner points at the endpoint without revealing the path secret.
    const banner = h.built.banner("http://127.0.0.1:3003");
    expect(banner).toContainEqual(["MCP endpoint", "http://127.0.0.1:3003/<MCP_PATH_SECRET>/mcp"]);
    expect(JSON.stringify(banner)).not.toContain(PATH_SECRET);
  });

  it("says the token is missing when there is none", async () => {
    h = await startHarness({ withToken: false });
    const res = await h.built.app.inject({ url: "/", headers: { host: "127.0.0.1" } });
    expect(res.body).toContain('<dd class="err">missing</dd>');
    expect(h.built.banner("http://b")).toContainEqual([
      "Portal token",
      "missing: paste one at http://b/token",
    ]);
  });
});
