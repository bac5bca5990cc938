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
      // real-time: scripts run in worker threads on the wall clock; a short real pause lets their
      // messages in before the fake clock moves again (the loop ends on the condition, not the pause).
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
        // real-time: scripts run in worker threads on the wall clock; a short real pause lets their
        // messages in before the fake clock moves again (the loop ends on the condition, not the pause).
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
});
