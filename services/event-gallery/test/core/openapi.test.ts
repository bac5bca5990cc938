import { checkOpenApi } from "@app/kit/testing/openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, startGallery } from "./harness.js";

describe("OpenAPI document of the gallery API", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
  });
  afterAll(() => g.close());

  it("validates as OpenAPI 3.1 and lists every /api/v1 route with its schemas", async () => {
    const { doc, routes, missing, withoutSchema, undescribed } = await checkOpenApi(
      g.built.app,
      "/api/v1/openapi.json",
    );
    expect(doc.openapi).toBe("3.1.0");
    expect(missing).toEqual([]);
    expect(withoutSchema).toEqual([]);
    // Every operation has a summary and a tag (the service's operation table).
    expect(undescribed).toEqual([]);
    expect(routes).toBeGreaterThan(40);
    const paths = doc.paths ?? {};
    expect(Object.keys(paths)).toEqual(expect.arrayContaining(["/api/v1/join", "/api/v1/upload/{id}/like"]));
    expect(paths["/api/v1/feed"]?.get?.security).toEqual([{ session: [] }]);
    expect(paths["/api/v1/join"]?.post?.security).toBeUndefined();
    // The web app's pages and the health check are not part of the API document.
    expect(Object.keys(paths).some((p) => !p.startsWith("/api/v1/"))).toBe(false);
  });

  it("serves the reference page from the package, open", async () => {
    const page = await g.built.app.inject({ method: "GET", url: "/api/v1/docs/" });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain("swagger-ui");
    expect(page.body).not.toMatch(/https?:\/\/(?!localhost)/);
  });
});
