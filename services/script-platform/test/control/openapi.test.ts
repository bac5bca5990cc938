import { checkOpenApi } from "@app/kit/testing/openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./harness.js";

describe("OpenAPI document of the platform API", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({}, { login: false });
  });
  afterAll(() => h.close());

  it("validates as OpenAPI 3.1 and lists every /api/v1 route with its schemas", async () => {
    const { doc, routes, missing, withoutSchema, undescribed } = await checkOpenApi(
      h.built.app,
      "/api/v1/openapi.json",
    );
    expect(doc.openapi).toBe("3.1.0");
    expect(missing).toEqual([]);
    expect(withoutSchema).toEqual([]);
    // Every operation has a summary and a tag (the service's operation table).
    expect(undescribed).toEqual([]);
    // Colon actions are literal, distinct paths (not one `{action}` that collides with `{id}`).
    expect(doc.paths?.["/api/v1/admin/scripts/{id}:run"]?.post?.parameters).toMatchObject([
      { in: "path", name: "id" },
    ]);
    expect(doc.paths?.["/api/v1/admin/scripts/{id}/versions/{n}:restore"]?.post).toBeDefined();
    expect(Object.keys(doc.paths ?? {}).filter((p) => p.includes("{action}"))).toEqual([]);
    // Real bounds, not the ±2^53 of an integer.
    const body = doc.paths?.["/api/v1/admin/scripts"]?.post?.requestBody as {
      content: Record<
        string,
        { schema: { properties: Record<string, { minimum?: number; maximum?: number }> } }
      >;
    };
    expect(body.content["application/json"]?.schema.properties.timeout_seconds).toMatchObject({
      minimum: 1,
      maximum: 300,
    });
    expect(JSON.stringify(doc)).not.toContain("9007199254740991");
    expect(routes).toBeGreaterThan(50);
    const paths = doc.paths ?? {};
    expect(Object.keys(paths)).toEqual(
      expect.arrayContaining(["/version", "/api/v1/admin/apps/{app}", "/api/v1/admin/routes:match"]),
    );
    // Admin routes name their credentials; the login route is open.
    expect(paths["/api/v1/admin/apps"]?.get?.security).toEqual([
      { bearer: [] },
      { apiKey: [] },
      { cookie: [] },
    ]);
    expect(paths["/api/v1/admin/login"]?.post?.security).toBeUndefined();
    // Scripts' own paths (user routes) are each app's API, not this one.
    expect(Object.keys(paths).some((p) => p === "/" || p === "/{*}")).toBe(false);
  });

  it("serves the reference page from the package", async () => {
    const page = await h.built.app.inject({ method: "GET", url: "/api/v1/docs/" });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("swagger-ui");
    expect(page.body).not.toMatch(/https?:\/\/(?!localhost)/);
  });
});
