import { expect } from "vitest";
import type { Harness } from "../control/harness.js";

/** Helpers for end-to-end trigger tests that run real scripts through the runtime's dispatcher. */

export async function createScript(h: Harness, appId: string, name: string, source: string): Promise<string> {
  const res = await h.call("POST", "/api/v1/admin/scripts", {
    app_id: appId,
    name,
    kind: "endpoint",
    source,
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id;
}

export async function createTrigger(
  h: Harness,
  appId: string,
  kind: string,
  body: Record<string, unknown>,
  as?: string,
) {
  const res = await h.call("POST", `/api/v1/admin/apps/${appId}/triggers/${kind}`, body, as);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().id as string;
}

/**
 * Let the dispatcher drain: wait for its runs, then move the fake clock a second (poll timers,
 * retries coming due, cron, the dead-letter settler) until `done()` holds.
 */
export async function drainUntil(h: Harness, done: () => Promise<boolean>, maxSteps = 60): Promise<void> {
  const runtime = h.built.engine.runtime;
  for (let i = 0; i < maxSteps; i++) {
    await runtime.dispatcher.idle();
    if (await done()) return;
    await h.clock.advance(1000);
    // real-time: scripts run in worker threads on the wall clock; a short real pause lets their
    // messages in before the fake clock moves again (the loop ends on the condition, not the pause).
    await new Promise((r) => setTimeout(r, 2));
  }
  throw new Error("the dispatcher did not reach the expected state");
}

export async function kvValue(h: Harness, appId: string, collection: string, key: string): Promise<unknown> {
  const r = await h.built.ctx.database.db
    .selectFrom("kv_entries")
    .select("value")
    .where("app_id", "=", appId)
    .where("collection", "=", collection)
    .where("key", "=", key)
    .executeTakeFirst();
  return r ? JSON.parse(r.value) : undefined;
}

export async function kvAll(h: Harness, appId: string, collection: string): Promise<unknown[]> {
  const rows = await h.built.ctx.database.db
    .selectFrom("kv_entries")
    .select(["key", "value"])
    .where("app_id", "=", appId)
    .where("collection", "=", collection)
    .orderBy("key")
    .execute();
  return rows.map((r) => JSON.parse(r.value));
}

export async function executionsOf(h: Harness, scriptId: string) {
  return h.built.ctx.database.db
    .selectFrom("executions")
    .select(["id", "status", "invocation_type", "error"])
    .where("script_id", "=", scriptId)
    .orderBy("id")
    .execute();
}
