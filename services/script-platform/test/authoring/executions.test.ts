import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Harness, startHarness } from "../control/harness.js";
import { openSseClient } from "../triggers/sse-client.js";

describe("executions: filters and the live tail", () => {
  let h: Harness;
  let appId: string;
  let okId: string;
  let badId: string;
  let port: number;

  const script = async (name: string, source: string) =>
    (await h.call("POST", "/api/v1/admin/scripts", { app_id: appId, name, source })).json().id as string;
  const list = async (q: string) =>
    (await h.call("GET", `/api/v1/admin/apps/${appId}/executions?${q}`)).json().items as Array<{
      script_id: string;
      status: string;
      error: { code: string; line: number | null } | null;
    }>;

  /** Execution records commit in group commits after the response: wait until `n` are listed. */
  const recorded = async (n: number) => {
    for (let i = 0; i < 200; i++) {
      if ((await list("")).length >= n) return;
      await h.clock.advance(10);
      await new Promise((r) => setTimeout(r, 5));
    }
    throw new Error(`fewer than ${n} executions were recorded`);
  };

  beforeAll(async () => {
    h = await startHarness();
    appId = (await h.call("POST", "/api/v1/admin/apps", { slug: "tail" })).json().id;
    okId = await script("fine", "export default () => 'fine';");
    badId = await script("broken", "export default (ctx) => {\n  const o = null;\n  return o.x;\n};");
    await h.built.app.listen({ port: 0, host: "127.0.0.1" });
    port = (h.built.app.server.address() as AddressInfo).port;
  });
  afterAll(async () => h.close());

  it("filters by status, script, invocation type and time; errors carry the script line", async () => {
    expect((await h.call("GET", `/api/v1/execute/${okId}`)).statusCode).toBe(200);
    await recorded(1);
    await h.clock.advance(60 * 60 * 1000);
    expect((await h.call("GET", `/api/v1/execute/${badId}`)).statusCode).toBe(502);
    await recorded(2);
    const all = await list("");
    expect(all).toHaveLength(2);
    expect((await list("status=ok")).map((e) => e.script_id)).toEqual([okId]);
    const errors = await list("status=error");
    expect(errors.map((e) => e.script_id)).toEqual([badId]);
    expect(errors[0]?.error).toMatchObject({ code: "script_error", line: 3 });
    expect(await list("status=timeout")).toEqual([]);
    expect(await list("status=limit")).toEqual([]);
    expect((await list(`script_id=${okId}`)).map((e) => e.script_id)).toEqual([okId]);
    expect(await list("invocation_type=cron")).toEqual([]);
    expect(await list("invocation_type=http")).toHaveLength(2);
    const later = await list(`since=${encodeURIComponent("2026-11-21T12:30:00.000Z")}`);
    expect(later.map((e) => e.script_id)).toEqual([badId]);
    expect((await h.call("GET", `/api/v1/admin/apps/${appId}/executions?status=weird`)).statusCode).toBe(422);
    expect((await h.call("GET", `/api/v1/admin/apps/${appId}/executions?since=yesterday`)).statusCode).toBe(
      422,
    );
  });

  it("streams runs that finish after it opened, with the filters, to an admin only", async () => {
    const denied = await openSseClient(port, `/api/v1/admin/apps/${appId}/executions/stream`, {});
    expect(denied.status).toBe(401);
    denied.close();
    const auth = { authorization: `Bearer ${h.token}` };
    const every = await openSseClient(port, `/api/v1/admin/apps/${appId}/executions/stream`, auth);
    const onlyErrors = await openSseClient(
      port,
      `/api/v1/admin/apps/${appId}/executions/stream?status=error`,
      auth,
    );
    expect(every.status).toBe(200);
    await h.clock.advance(1000);
    await h.call("GET", `/api/v1/execute/${okId}`);
    await recorded(3);
    await h.call("GET", `/api/v1/execute/${badId}`);
    const events = (c: { text(): string }) =>
      c
        .text()
        .split("\n\n")
        .filter((f) => f.includes("event: execution"))
        .map((f) => JSON.parse(f.slice(f.indexOf("data: ") + 6)) as { script_id: string });
    const waitEvents = async (c: { text(): string }, n: number) => {
      for (let i = 0; i < 300 && events(c).length < n; i++) {
        await h.clock.advance(100);
        await new Promise((r) => setTimeout(r, 5));
      }
    };
    await waitEvents(every, 2);
    await waitEvents(onlyErrors, 1);
    // Only runs after the stream opened (the first test's two runs are not replayed).
    expect(events(every).map((e) => e.script_id)).toEqual([okId, badId]);
    expect(events(onlyErrors).map((e) => e.script_id)).toEqual([badId]);
    // Nothing is sent twice while the overlap window re-reads.
    await h.clock.advance(3000);
    expect(events(every)).toHaveLength(2);
    every.close();
    onlyErrors.close();
  });

  it("records, the status filter and the stream share one vocabulary: ok, error, timeout, limit", async () => {
    const hog = (
      await h.call("POST", "/api/v1/admin/scripts", {
        app_id: appId,
        name: "hog",
        source: "export default () => { for (;;) {} };",
        sandbox: { max_operations: 10_000 },
      })
    ).json().id as string;
    const slow = (
      await h.call("POST", "/api/v1/admin/scripts", {
        app_id: appId,
        name: "slow",
        source: "export default () => new Promise((r) => setTimeout(r, 60_000));",
        timeout_seconds: 1,
      })
    ).json().id as string;
    const auth = { authorization: `Bearer ${h.token}` };
    const limits = await openSseClient(
      port,
      `/api/v1/admin/apps/${appId}/executions/stream?status=limit`,
      auth,
    );
    await h.clock.advance(1000);
    expect((await h.call("GET", `/api/v1/execute/${hog}`)).statusCode).toBe(507);
    const slowRun = h.call("GET", `/api/v1/execute/${slow}`);
    for (
      let i = 0;
      i < 100 && (await Promise.race([slowRun.then(() => true), Promise.resolve(false)])) === false;
      i++
    ) {
      await h.clock.advance(500);
      await new Promise((r) => setTimeout(r, 20));
    }
    expect((await slowRun).statusCode).toBe(504);
    await recorded(6);
    const all = await list("");
    expect(new Set(all.map((e) => e.status))).toEqual(new Set(["ok", "error", "timeout", "limit"]));
    for (const status of ["ok", "error", "timeout", "limit"]) {
      const some = await list(`status=${status}`);
      expect(some.length).toBeGreaterThan(0);
      expect(some.every((e) => e.status === status)).toBe(true);
    }
    expect((await list("status=limit")).map((e) => [e.script_id, e.error?.code])).toEqual([
      [hog, "operation_limit"],
    ]);
    expect((await list("status=timeout")).map((e) => e.script_id)).toEqual([slow]);
    // The stored words are no filter values.
    for (const old of ["succeeded", "failed"])
      expect((await h.call("GET", `/api/v1/admin/apps/${appId}/executions?status=${old}`)).statusCode).toBe(
        422,
      );
    await limits.waitFor('"status":"limit"', h.clock);
    expect(limits.text()).not.toMatch(/"status":"(ok|error|timeout)"/);
    limits.close();
  });
});
