import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { createHttpApp } from "../src/http/app.js";
import { registerOpenApi } from "../src/http/openapi.js";
import { typed } from "../src/http/typed-routes.js";
import { captureLogger } from "../src/logger.js";
import { launchChromium } from "../src/testing/browser.js";

// The reference page renders under its own CSP with zero console errors (a blocked inline style
// or script shows up as one).
describe("API reference page in Chromium", () => {
  const app = createHttpApp({ logger: captureLogger().logger });
  let base = "";
  beforeAll(async () => {
    await registerOpenApi(app, {
      title: "t",
      version: "1",
      prefix: "/api",
      jsonPath: "/api/openapi.json",
      docsPath: "/api/docs",
      operations: { "GET /api/items/{id}": ["items", "Get an item"] },
    });
    typed(app).get(
      "/api/items/:id",
      { schema: { params: z.object({ id: z.string() }), response: { 200: z.object({ id: z.string() }) } } },
      async (req) => ({ id: req.params.id }),
    );
    base = await app.listen({ host: "127.0.0.1", port: 0 });
  });
  afterAll(async () => app.close());

  it("loads with no console error and shows the operation's summary", async () => {
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
      const errors: string[] = [];
      page.on("console", (m) => {
        if (m.type() === "error") errors.push(m.text());
      });
      page.on("pageerror", (e) => errors.push(String(e)));
      await page.goto(`${base}/api/docs/`);
      await page.getByText("Get an item").first().waitFor();
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });
});
