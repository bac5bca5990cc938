import { FakeClock } from "@app/kit/clock";
import { describe, expect, it } from "vitest";
import type { ScriptRecord } from "../../src/control/scripts-repository.js";
import type { Job } from "../../src/dispatch/job.js";
import { createExecutor } from "../../src/execution/executor.js";
import { SANDBOX_CEILINGS } from "../../src/sandbox/limits.js";
import { createModuleResolver } from "../../src/sandbox/module-loader.js";
import type { PoolRun } from "../../src/sandbox/pool.js";
import type { SdkDeps } from "../../src/sdk/types.js";
import { SDK_VERSION } from "../../src/version.js";

// A sync request's ctx crosses to the worker as one JSON string (the request's text from the
// outbox payload): it must read exactly as the ctx object it replaces.
const script: ScriptRecord = {
  id: "s1",
  app_id: "a1",
  name: 'he"llo',
  kind: "endpoint",
  source: "export default () => 1",
  description: "",
  timeout_seconds: 5,
  sandbox: {},
  memory_limit_mb: null,
  created_at: "2026-01-01T00:00:00.000Z",
  updated_at: "2026-01-01T00:00:00.000Z",
  language: "javascript",
  authored_source: null,
  version: 1,
};

function executorSeeing(runs: PoolRun[]) {
  const lookup = { byId: async () => script, byIds: async () => [script] };
  return createExecutor({
    clock: new FakeClock(),
    scripts: lookup as never,
    sandbox: { ceilings: SANDBOX_CEILINGS },
    engine: {
      run: async (r: PoolRun) => {
        runs.push(r);
        return { ok: true, value: null, logs: [], durationMs: 0 };
      },
    },
    modules: createModuleResolver({ scripts: { byName: async () => null } as never, cacheSize: 8 }),
    sdk: {} as SdkDeps,
    instanceId: "i1",
  });
}

const request = {
  method: "POST",
  path: "/p",
  headers: { "x-a": 'q"uote' },
  params: { id: "7" },
  query: { q: "ü" },
  rest: "",
  body: { n: [1, null] },
};
const job = (over: Partial<Job>): Job => ({
  executionId: "e1",
  appId: "a1",
  scriptId: "s1",
  invocationType: "http",
  requestId: "r1",
  request,
  event: null,
  principal: null,
  depth: 0,
  script,
  ...over,
});

describe("executor: ctx as JSON text", () => {
  it("sends a sync request's ctx as text that parses to the ctx object, keys in the same order", async () => {
    const runs: PoolRun[] = [];
    const ex = executorSeeing(runs);
    await ex.run(job({ requestJson: JSON.stringify(request) }));
    await ex.run(job({ requestJson: JSON.stringify(request), requestId: null }));
    await ex.run(job({}));
    const [asText, noRequestId, asObject] = runs as [PoolRun, PoolRun, PoolRun];
    expect(asText.ctx).toBeNull();
    expect(typeof asText.ctxJson).toBe("string");
    expect(asObject.ctxJson).toBeUndefined();
    const expected = {
      execution_id: "e1",
      script_id: "s1",
      script_name: 'he"llo',
      app_id: "a1",
      request_id: "r1",
      invocation_type: "http",
      sdk_version: SDK_VERSION,
      request,
      event: null,
    };
    expect(asObject.ctx).toEqual(expected);
    expect(asText.ctxJson).toBe(JSON.stringify(asObject.ctx));
    expect(JSON.parse(noRequestId.ctxJson as string)).toEqual({ ...expected, request_id: null });
  });

  it("keeps the ctx an object when there is an event or no request text", async () => {
    const runs: PoolRun[] = [];
    const ex = executorSeeing(runs);
    await ex.run(job({ requestJson: JSON.stringify(request), event: { e: 1 } }));
    await ex.run(job({ requestJson: null }));
    expect(runs.map((r) => r.ctxJson)).toEqual([undefined, undefined]);
    expect(runs[0]?.ctx).toMatchObject({ event: { e: 1 } });
  });
});
