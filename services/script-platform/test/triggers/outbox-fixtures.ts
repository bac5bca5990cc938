// Outbox rows, finished runs and a dispatcher as the dispatcher tests build them (one shape, many tests).
import { type Clock, toIso } from "@app/kit/clock";
import { newId } from "@app/kit/ids";
import { createDispatcher, type DispatcherDeps } from "../../src/dispatch/dispatcher.js";
import { createInbox } from "../../src/dispatch/inbox.js";
import type { Finished, Job } from "../../src/dispatch/job.js";
import type { OutboxRow } from "../../src/dispatch/outbox.js";
import { executionsRepo } from "../../src/execution/executions-repository.js";

/** An open pubsub row of `appId`, due now, for a fresh script unless `over` says otherwise. */
export function pubsubRow(clock: Clock, appId: string, over: Partial<OutboxRow> = {}): OutboxRow {
  return {
    id: newId(),
    app_id: appId,
    source_kind: "pubsub",
    trigger_id: null,
    script_id: newId(),
    execution_id: null,
    payload: JSON.stringify({ event: { pubsub: { message: {} } } }),
    due_at: clock.iso(),
    attempts: 0,
    depth: 1,
    principal: null,
    reply_to: null,
    claimed_by: null,
    lease_until: null,
    created_at: clock.iso(),
    ...over,
  };
}

/** The i-th of a backlog that became due a second ago, oldest first. */
export function backlogRow(clock: Clock, appId: string, i: number, over: Partial<OutboxRow> = {}): OutboxRow {
  return pubsubRow(clock, appId, {
    payload: JSON.stringify({ event: { pubsub: { message: { i } } } }),
    due_at: toIso(clock.now() - 1000 + i),
    created_at: toIso(clock.now() - 1000),
    ...over,
  });
}

/** A run of `job` that succeeded at once on instance "A". */
export function succeeded(job: Job, clock: Clock): Finished {
  const now = clock.iso();
  return {
    outcome: { ok: true, value: null },
    record: {
      id: job.executionId,
      app_id: job.appId,
      script_id: job.scriptId,
      invocation_type: job.invocationType,
      status: "succeeded",
      duration_ms: 0,
      logs: [],
      error: null,
      instance_id: "A",
      created_at: now,
      finished_at: now,
    },
  };
}

/**
 * A dispatcher of instance "A" over `database` recording into the real executions table, with
 * `executor` running its jobs; failed runs are dropped unless `over` says otherwise.
 */
export function testDispatcher(
  deps: Pick<DispatcherDeps, "database" | "clock" | "logger" | "executor"> & Partial<DispatcherDeps>,
) {
  return createDispatcher({
    executions: executionsRepo(deps.database),
    failures: { onRunFailed: async () => "drop" },
    inbox: createInbox({ instanceId: "A", capacity: 10 }),
    instanceId: "A",
    maxConcurrency: 32,
    ...deps,
  });
}
