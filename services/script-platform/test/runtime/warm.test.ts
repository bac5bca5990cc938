import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";

/**
 * Warm contexts (issue 10, item 3): per worker, a context per (app, script id, sources) is kept
 * with its modules evaluated; module-level state may persist between runs of one version, never
 * across versions, apps or modules that changed; the SDK capability comes with each invocation.
 * One worker, so every run meets the same context cache. Runs on both backends.
 */
describe("warm contexts", () => {
  let h: Harness;
  const apps: Record<string, string> = {};
  const create = async (app: string, name: string, source: string, kind = "endpoint") => {
    const res = await h.call("POST", "/api/v1/admin/scripts", { app_id: apps[app], name, kind, source });
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json().id as string;
  };
  const exec = async (id: string, token: string | null = null) => {
    const res = await h.built.app.inject({
      method: "GET",
      url: `/api/v1/execute/${id}`,
      headers: token ? { authorization: `Bearer ${token}` } : {},
    });
    if (res.statusCode !== 200) throw new Error(`${res.statusCode} ${res.body}`);
    return res.json();
  };
  const COUNTER = `let n = 0;\nexport default () => ++n;`;

  beforeAll(async () => {
    h = await startHarness({ PLATFORM_WORKERS: "1", PLATFORM_APP_CONCURRENCY: "1" });
    for (const slug of ["warm-a", "warm-b"])
      apps[slug] = (await h.call("POST", "/api/v1/admin/apps", { slug })).json().id;
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  it("reuses a context for one version, starts a fresh one for a new version and for another app", async () => {
    const a = await create("warm-a", "counter", COUNTER);
    const b = await create("warm-b", "counter", COUNTER);
    expect([await exec(a), await exec(a), await exec(a)]).toEqual([1, 2, 3]);
    // Same source, other app: its own context.
    expect(await exec(b)).toBe(1);
    const put = await h.call("PUT", `/api/v1/admin/scripts/${a}`, {
      source: `let n = 100;\nexport default () => ++n;`,
    });
    expect(put.statusCode).toBe(200);
    expect([await exec(a), await exec(a)]).toEqual([101, 102]);
  });

  it("discards a context after a failed run", async () => {
    const id = await create(
      "warm-a",
      "flaky",
      `let n = 0;\nexport default (ctx) => { n++; if (ctx.request.query.fail) throw new Error("asked to"); return n; };`,
    );
    expect([await exec(id), await exec(id)]).toEqual([1, 2]);
    const failed = await h.built.app.inject({ method: "GET", url: `/api/v1/execute/${id}?fail=1` });
    expect(failed.statusCode).toBe(502);
    expect(await exec(id)).toBe(1);
  });

  it("invalidates the dependants of a changed module", async () => {
    const lib = await create("warm-a", "lib", `export const V = 1;`, "module");
    const id = await create(
      "warm-a",
      "user",
      `import { V } from "lib";\nlet n = 0;\nexport default () => [V, ++n];`,
    );
    expect([await exec(id), await exec(id)]).toEqual([
      [1, 1],
      [1, 2],
    ]);
    expect(
      (await h.call("PUT", `/api/v1/admin/scripts/${lib}`, { source: `export const V = 2;` })).statusCode,
    ).toBe(200);
    expect(await exec(id)).toEqual([2, 1]);
  });

  it("binds the SDK capability per invocation, never per context", async () => {
    const id = await create(
      "warm-a",
      "writer",
      `let runs = 0;
export default async () => {
  runs++;
  try { await kv.collection("w").set("k", runs); return ["wrote", runs]; }
  catch (e) { return [e.message, runs]; }
};`,
    );
    const key = await h.call("POST", "/api/v1/admin/api-keys", {
      name: "reader",
      scopes: ["script:read"],
      app_id: apps["warm-a"],
    });
    expect(key.statusCode).toBe(201);
    const reader = key.json().secret as string;
    expect(await exec(id, h.token)).toEqual(["wrote", 1]);
    // The same warm context (runs keeps counting), the reader's capability.
    const denied = await exec(id, reader);
    expect(denied[1]).toBe(2);
    expect(denied[0]).toMatch(/permission denied/);
    expect(await exec(id, h.token)).toEqual(["wrote", 3]);
    expect(await exec(id, null)).toEqual(["wrote", 4]);
  });
});
