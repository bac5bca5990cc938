import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { undocumentedCalls } from "@app/kit/testing/openapi";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "./harness.js";

// The dashboard keeps its own typed client; this fails when it calls an admin route (method +
// path) the OpenAPI document does not list, e.g. a route renamed on one side only.
const dashboardSrc = fileURLToPath(new URL("../../dashboard/src/", import.meta.url));
const ADMIN = "/api/v1/admin";

/** `${…}` parts of a template (a query string built by `qs` dropped first) become `{}`. */
function normalise(path: string): string {
  return path
    .replace(/\$\{qs\(.*?\)\}/g, "")
    .replace(/\?.*$/, "")
    .replace(/\$\{[^}]*\}/g, "{}");
}

function dashboardCalls(): string[] {
  const calls = new Set<string>();
  const visit = (d: string) => {
    for (const e of readdirSync(d)) {
      const p = join(d, e);
      if (statSync(p).isDirectory()) {
        visit(p);
        continue;
      }
      if (!/\.tsx?$/.test(p)) continue;
      const text = readFileSync(p, "utf8");
      // api.get("apps"), api.post<App>(`apps/${id}`, …): paths relative to the admin API.
      for (const m of text.matchAll(/\bapi\.(get|post|put|patch|del)(?:<[^()]*>)?\(\s*["`]([^"`]*)/g)) {
        const method = m[1] === "del" ? "DELETE" : (m[1] as string).toUpperCase();
        calls.add(`${method} ${ADMIN}/${normalise(m[2] as string)}`);
      }
      // request<T>("POST", `${API}/login`, …): the client's own calls.
      for (const m of text.matchAll(/\brequest(?:<[^()]*>)?\(\s*"([A-Z]+)",\s*["`]\$\{API\}([^"`]*)/g))
        calls.add(`${m[1]} ${ADMIN}${normalise(m[2] as string)}`);
      // The live tail's event stream.
      for (const m of text.matchAll(/new EventSource\(\s*["`]([^"`]*)/g))
        calls.add(`GET ${normalise(m[1] as string)}`);
    }
  };
  visit(dashboardSrc);
  return [...calls].sort();
}

describe("dashboard calls only documented routes", () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness({}, { login: false });
  });
  afterAll(() => h.close());

  it("finds every admin API call of the dashboard in /api/v1/openapi.json", async () => {
    const doc = (await h.built.app.inject({ url: "/api/v1/openapi.json" })).json() as {
      paths: Record<string, Record<string, unknown>>;
    };
    const calls = dashboardCalls();
    expect(calls.length).toBeGreaterThan(30);
    expect(calls).toContain("POST /api/v1/admin/scripts/{}:run");
    expect(undocumentedCalls(doc.paths, calls)).toEqual([]);
  });
});
