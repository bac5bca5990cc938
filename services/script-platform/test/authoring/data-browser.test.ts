import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";

describe("data browser: kv and docs of an app", () => {
  let h: Harness;
  let appId: string;
  let writer: string;

  const run = (source: string) =>
    h.call("POST", `/api/v1/admin/scripts/${writer}:run`, { source, request: { method: "GET", path: "/" } });

  beforeAll(async () => {
    h = await startHarness();
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "browse" })).json().id;
    writer = (
      await h.call("POST", "/api/v1/admin/scripts", {
        app_id: appId,
        name: "w",
        source: "export default () => 1;",
      })
    ).json().id;
    const r = await run(`export default async () => {
      for (const k of ["a1", "a2", "b1"]) await kv.collection("one").set(k, { k });
      await kv.collection("two").set("z", 26);
      const d = await docs.collection("orders").create({ total: 5 }, { id: "o1" });
      await docs.collection("orders").create({ total: 7 }, { id: "o2" });
      return d.id;
    }`);
    expect(r.json().error).toBeNull();
  });
  afterAll(async () => h.close());

  it("lists kv across and within collections with a cursor and a prefix", async () => {
    const all = (await h.call("GET", `/api/v1/admin/apps/${appId}/kv?limit=3`)).json();
    expect(all.items.map((i: { collection: string; key: string }) => `${i.collection}/${i.key}`)).toEqual([
      "one/a1",
      "one/a2",
      "one/b1",
    ]);
    expect(all.items[0]).toMatchObject({ value: { k: "a1" }, updated_at: expect.any(String) });
    const next = (
      await h.call("GET", `/api/v1/admin/apps/${appId}/kv?limit=3&cursor=${all.next_cursor}`)
    ).json();
    expect(next.items.map((i: { key: string }) => i.key)).toEqual(["z"]);
    expect(next.next_cursor).toBeNull();
    const pre = (await h.call("GET", `/api/v1/admin/apps/${appId}/kv?collection=one&prefix=a`)).json();
    expect(pre.items.map((i: { key: string }) => i.key)).toEqual(["a1", "a2"]);
    expect((await h.call("GET", `/api/v1/admin/apps/${appId}/kv?cursor=nonsense`)).statusCode).toBe(422);
    expect((await h.call("GET", `/api/v1/admin/apps/${appId}/kv`, undefined, null)).statusCode).toBe(401);
  });

  it("lists, shows and deletes docs; deletes emit change events like the SDK's", async () => {
    const handler = (
      await h.call("POST", "/api/v1/admin/scripts", {
        app_id: appId,
        name: "on-delete",
        source: "export default (ctx) => ctx.event;",
      })
    ).json().id;
    expect(
      (
        await h.call("POST", `/api/v1/admin/apps/${appId}/triggers/kv`, {
          script_id: handler,
          collection: "one",
          operations: ["delete"],
        })
      ).statusCode,
    ).toBe(201);
    const list = (await h.call("GET", `/api/v1/admin/apps/${appId}/docs?collection=orders`)).json();
    expect(list.items.map((d: { id: string }) => d.id)).toEqual(["o1", "o2"]);
    const one = (await h.call("GET", `/api/v1/admin/apps/${appId}/docs/orders/o1`)).json();
    expect(one).toMatchObject({ collection: "orders", id: "o1", data: { total: 5 } });
    expect((await h.call("DELETE", `/api/v1/admin/apps/${appId}/docs/orders/o1`)).statusCode).toBe(204);
    expect((await h.call("GET", `/api/v1/admin/apps/${appId}/docs/orders/o1`)).statusCode).toBe(404);
    expect((await h.call("DELETE", `/api/v1/admin/apps/${appId}/docs/orders/o1`)).statusCode).toBe(404);

    expect((await h.call("DELETE", `/api/v1/admin/apps/${appId}/kv/one/a1`)).statusCode).toBe(204);
    expect((await h.call("DELETE", `/api/v1/admin/apps/${appId}/kv/one/a1`)).statusCode).toBe(404);
    // The delete fired the kv trigger: its run shows up in the executions log.
    let fired: Array<{ invocation_type: string }> = [];
    for (let n = 0; n < 200 && fired.length === 0; n++) {
      fired = (
        await h.call("GET", `/api/v1/admin/apps/${appId}/executions?script_id=${handler}&invocation_type=kv`)
      ).json().items;
      if (fired.length === 0) {
        await h.clock.advance(100);
        // real-time: scripts run in worker threads on the wall clock; a short real pause lets their
        // messages in before the fake clock moves again (the loop ends on the condition, not the pause).
        await new Promise((r) => setTimeout(r, 5));
      }
    }
    expect(fired).toHaveLength(1);
  });
});
