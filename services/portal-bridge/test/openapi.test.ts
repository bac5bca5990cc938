import { checkOpenApi } from "@app/kit/testing/openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUTH, CONNECTOR, type Harness, PATH_SECRET, startHarness } from "./helpers.js";

describe("OpenAPI document of the bridge's HTTP API", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({ env: { MCP_CONNECTOR_TOKEN: CONNECTOR, MCP_PATH_SECRET: PATH_SECRET } });
  });
  afterAll(() => h.close());

  it("validates as OpenAPI 3.1 and lists every API route with schemas, never /mcp", async () => {
    const { doc, routes, missing, withoutSchema, undescribed } = await checkOpenApi(
      h.built.app,
      "/api/openapi.json",
    );
    expect(doc.openapi).toBe("3.1.0");
    expect(missing).toEqual([]);
    expect(withoutSchema).toEqual([]);
    // Every operation has a summary and a tag (the service's operation table).
    expect(undescribed).toEqual([]);
    expect(routes).toBeGreaterThanOrEqual(5);
    const paths = Object.keys(doc.paths ?? {});
    expect(paths).toEqual(
      expect.arrayContaining(["/api/token", "/token", "/api/files/{fileRecordId}/{fileName}"]),
    );
    expect(paths.some((p) => p.includes("mcp"))).toBe(false);
    const text = JSON.stringify(doc);
    for (const secret of [AUTH, CONNECTOR, PATH_SECRET]) expect(text).not.toContain(secret);
    expect(doc.paths?.["/api/token"]?.put?.security).toEqual([{ secret: [] }]);
  });

  it("serves the reference page from the package without a credential", async () => {
    const page = await h.built.app.inject({ method: "GET", url: "/api/docs/" });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("swagger-ui");
    expect(page.body).not.toMatch(/https?:\/\/(?!localhost)/);
  });

  it("covers the OAuth endpoints too when MCP_OAUTH=on", async () => {
    const o = await startHarness({ env: { MCP_OAUTH: "on", MCP_PUBLIC_URL: "https://bridge.example.org" } });
    try {
      const { missing, withoutSchema, doc } = await checkOpenApi(o.built.app, "/api/openapi.json");
      expect(missing).toEqual([]);
      expect(withoutSchema).toEqual([]);
      expect(Object.keys(doc.paths ?? {})).toEqual(
        expect.arrayContaining(["/oauth/token", "/api/oauth/clients"]),
      );
    } finally {
      await o.close();
    }
  });
});
