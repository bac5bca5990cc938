import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { undocumentedCalls } from "@app/kit/testing/openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gallery, startGallery } from "./harness.js";

// The web app keeps its own typed client; this fails when it calls a route (method + path) the
// OpenAPI document does not list, e.g. a route renamed on one side only.
const webSrc = fileURLToPath(new URL("../../web/src/", import.meta.url));

function webCalls(): string[] {
  const calls = new Set<string>();
  const visit = (d: string) => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) visit(p);
      else if (/\.tsx?$/.test(p))
        for (const m of readFileSync(p, "utf8").matchAll(
          /\bapi(?:<[^>]*>)?\(\s*"([A-Z]+)",\s*["`](\/[^"`?]*)/g,
        ))
          calls.add(`${m[1]} ${(m[2] as string).replace(/\$\{[^}]*\}/g, "{}")}`);
    }
  };
  visit(webSrc);
  return [...calls].sort();
}

describe("web app calls only documented routes", () => {
  let g: Gallery;
  beforeAll(async () => {
    g = await startGallery();
  });
  afterAll(async () => g.close());

  it("finds every api() call of the web app in /api/v1/openapi.json", async () => {
    const doc = (await g.built.app.inject({ url: "/api/v1/openapi.json" })).json() as {
      paths: Record<string, Record<string, unknown>>;
    };
    const calls = webCalls();
    expect(calls.length).toBeGreaterThan(30);
    expect(undocumentedCalls(doc.paths, calls, "/api/v1")).toEqual([]);
  });
});
