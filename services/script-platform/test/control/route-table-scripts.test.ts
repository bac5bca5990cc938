import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { type Harness, startHarness } from "./harness.js";

/**
 * The route table carries the routed scripts, so a user-route request reads no script row. A
 * save or delete reloads the app's entry before the admin call answers: the very next request
 * runs the new version. Runs on both backends (across nodes: route-table-nodes.test.ts).
 */
describe("route table carries the routed scripts", () => {
  let h: Harness;
  let appId: string;
  const get = async (path: string) => {
    const res = await h.built.app.inject({ method: "GET", url: path, headers: { host: "carry.test" } });
    return { status: res.statusCode, body: res.body };
  };

  beforeAll(async () => {
    h = await startHarness();
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "carry" })).json().id;
    await h.call("POST", `/api/v1/admin/apps/${appId}/domains`, { host: "carry.test" });
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  it("serves a route without reading its script, and a save applies to the very next request", async () => {
    const s = (
      await h.call("POST", "/api/v1/admin/scripts", {
        app_id: appId,
        name: "v",
        source: `export default () => ({ statusCode: 200, body: "one" })`,
      })
    ).json();
    await h.call("POST", `/api/v1/admin/scripts/${s.id}/routes`, { path: "/v", method: "GET" });
    expect(h.built.ctx.routeTable.match("carry.test", "GET", "/v")?.script).toMatchObject({
      id: s.id,
      version: 1,
    });
    const reads = vi.spyOn(h.built.ctx.scripts, "byId");
    /** A user-route request, asserting that it read no script row (admin calls do). */
    const served = async (path: string) => {
      reads.mockClear();
      const r = await get(path);
      expect(reads).not.toHaveBeenCalled();
      return r;
    };
    try {
      expect(await served("/v")).toEqual({ status: 200, body: "one" });
      const put = await h.call("PUT", `/api/v1/admin/scripts/${s.id}`, {
        source: `export default () => ({ statusCode: 200, body: "two" })`,
      });
      expect(put.statusCode).toBe(200);
      expect(h.built.ctx.routeTable.match("carry.test", "GET", "/v")?.script).toMatchObject({ version: 2 });
      expect(await served("/v")).toEqual({ status: 200, body: "two" });
      // A restore is a save too.
      expect((await h.call("POST", `/api/v1/admin/scripts/${s.id}/versions/1:restore`)).statusCode).toBe(200);
      expect(await served("/v")).toEqual({ status: 200, body: "one" });
    } finally {
      reads.mockRestore();
    }
    expect((await h.call("DELETE", `/api/v1/admin/scripts/${s.id}`)).statusCode).toBe(204);
    expect(h.built.ctx.routeTable.match("carry.test", "GET", "/v")).toBeNull();
    expect((await get("/v")).status).toBe(404);
  });
});
